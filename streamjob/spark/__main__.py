"""``python -m streamjob.spark``: make the class-data sharing archive of Spark's driver
JVM now (``make setup`` runs it), so the first ``streamjob`` start is already fast
(streamjob/spark/cds.py)."""

from .session import prime_class_archive

if __name__ == "__main__":
    path = prime_class_archive()
    print(f"Spark class-data sharing archive: {path or 'none'}")

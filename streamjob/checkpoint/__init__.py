"""Checkpoints: where each job's Spark checkpoint lives, how completed ones are recorded
(DESIGN §4), retention, and purge on DROP."""

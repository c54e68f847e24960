import pytest
"""A Spark source runner whose socket the JVM closed exits quietly; other errors print."""

from streamjob.connectors import worker

pytestmark = pytest.mark.unit


def _raise_broken_pipe_while_handling_eof():
    try:
        try:
            raise EOFError
        except EOFError:
            raise BrokenPipeError(32, "Broken pipe")
    except BrokenPipeError as exc:
        return exc


def test_socket_gone_is_quiet_and_other_errors_are_printed():
    printed = []

    def default(t, e, tb):
        printed.append(e)

    exc = _raise_broken_pipe_while_handling_eof()
    worker.quiet_excepthook(type(exc), exc, exc.__traceback__, default)
    assert printed == []
    other = ValueError("a real error")
    worker.quiet_excepthook(ValueError, other, None, default)
    assert printed == [other]


def test_installed_only_inside_the_runner_process():
    assert worker.install() is False  # pytest is not pyspark's source runner

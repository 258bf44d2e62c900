"""atomic_file.py: files written whole or not at all, for the log scripts beside it and the benchmark
scripts (scripts/bench/sweep_report.py, make_train_net.py).

    with atomic_file.replacing('out.csv', 'w', newline='') as f:
        f.write(...)

The text goes to a hidden temporary file in the target's folder, renamed over the target only when
the block ends without an exception (a failure or an interrupt removes it), so the target is never
half-written: it is the old file, or none, or the new one whole. Nested blocks commit innermost
first, and each refuses a target that is a folder before anything is written, so several files go
together: none is renamed unless every one was written.
"""
import contextlib
import errno
import os
import tempfile


def _new_file_mode():
    """The permissions open() would give a new file (0666 less the umask); mkstemp's are 0600."""
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask


@contextlib.contextmanager
def replacing(path, mode='w', **open_args):
    """A file object open on a temporary file beside path (mode and open_args as for open()),
    renamed to path when the block ends cleanly and removed otherwise. OSError (with the path as
    its filename) when path is a folder or its folder cannot be written."""
    if os.path.isdir(path):
        raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), path)
    folder, name = os.path.split(path)
    try:
        handle, temporary = tempfile.mkstemp(dir=folder or '.', prefix='.%s.' % name, suffix='.partial')
    except OSError as error:
        raise OSError(error.errno, error.strerror, path) from None
    try:
        with os.fdopen(handle, mode, **open_args) as f:
            yield f
        os.chmod(temporary, _new_file_mode())
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise

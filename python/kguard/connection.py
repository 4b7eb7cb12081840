"""kguard.connection: a guarded kernel reports kguard's connection file.

Inside a guarded kernel, ipykernel believes its connection file is the private
one kguard wrote for it (in kguard's 0700 runtime directory). Anything that
reports that file (`%connect_info`, `ipykernel.get_connection_file()`,
`jupyter console --existing <file>`) would let a second client talk to the
inner kernel directly, past kguard's gate. kguard tells the kernel which file
its clients use in KGUARD_FRONTEND_CONNECTION_FILE; `apply()` makes
ipykernel's app report that file instead.

How it runs: kguard sets PYTHONSTARTUP to kguard/ipython_startup.py (IPython
runs PYTHONSTARTUP in kernels too, after the sockets are bound) and keeps the
user's own PYTHONSTARTUP in KGUARD_USER_PYTHONSTARTUP, which that file then
runs. `--ext kguard.connection` on ipykernel's command line works as well.

Standard library only; ipykernel is imported only when it is already loaded.
"""
import atexit
import os
import sys

ENV_FRONTEND = "KGUARD_FRONTEND_CONNECTION_FILE"
ENV_USER_STARTUP = "KGUARD_USER_PYTHONSTARTUP"


def frontend_connection_file(environ=None):
    """The frontend connection file kguard named, or None.

    Returns None when the variable is unset or empty, and raises ValueError
    for a value that is not an absolute path (kguard always passes one; a
    relative path would be resolved against the kernel's changing cwd)."""
    environ = os.environ if environ is None else environ
    path = environ.get(ENV_FRONTEND, "")
    if not path:
        return None
    if not os.path.isabs(path):
        raise ValueError("%s must be an absolute path, got %r" % (ENV_FRONTEND, path))
    return path


def apply(app=None, environ=None):
    """Make ipykernel's app report kguard's frontend connection file.

    app defaults to the running IPKernelApp; without one (a plain Python
    process, a non-IPython kernel) nothing happens. Returns True when the app
    now reports the frontend file. The inner file stays what ipykernel bound
    to; if ipykernel registered an at-exit removal of its own file, that
    removal is kept for the inner file and never reaches the frontend file,
    which belongs to the client that started kguard."""
    path = frontend_connection_file(environ)
    if path is None:
        return False
    if app is None:
        kernelapp = sys.modules.get("ipykernel.kernelapp")
        if kernelapp is None or not kernelapp.IPKernelApp.initialized():
            return False
        app = kernelapp.IPKernelApp.instance()
    inner = app.abs_connection_file
    if inner == path:
        return True
    # A registered cleanup is a bound method that would read the new path.
    atexit.unregister(app.cleanup_connection_file)
    atexit.register(_remove_quietly, inner)
    app.connection_file = path
    return True


def startup(environ=None):
    """What kguard's PYTHONSTARTUP file runs: apply(), then hand the
    environment back as the user set it, so that processes the kernel starts
    (a nested kernel from nbclient, a shell) inherit neither kguard's
    connection file nor its startup hook: KGUARD_FRONTEND_CONNECTION_FILE is
    removed and PYTHONSTARTUP is the user's own again (or unset). Returns the
    user's own PYTHONSTARTUP path for the caller to run, or None."""
    environ = os.environ if environ is None else environ
    try:
        apply(environ=environ)
        warm_up(environ=environ)
    finally:
        user = environ.pop(ENV_USER_STARTUP, "") or None
        environ.pop(ENV_FRONTEND, None)
        if user:
            environ["PYTHONSTARTUP"] = user
        else:
            environ.pop("PYTHONSTARTUP", None)
    return user


def warm_up(environ=None):
    """In a warm standby kernel (KGUARD_STANDBY=1, `kguard kernel
    --standby`): import the modules named in KGUARD_STANDBY_IMPORTS (comma
    separated, e.g. "torch,numpy") ahead, so the kernel that takes over after
    a restart has them loaded. Importing creates no GPU context (torch does
    not initialise CUDA/HIP at import). A module that fails to import is
    reported on stderr and skipped: the user's own cell will say why again.
    Returns the names imported."""
    environ = os.environ if environ is None else environ
    if environ.get("KGUARD_STANDBY") != "1":
        return []
    done = []
    for name in (environ.get("KGUARD_STANDBY_IMPORTS") or "").split(","):
        name = name.strip()
        if not name:
            continue
        try:
            __import__(name)
            done.append(name)
        except Exception as e:  # noqa: BLE001 (any import error: report, go on)
            print(f"kguard standby: import {name} failed: {e}", file=sys.stderr)
    return done


def _remove_quietly(path):
    try:
        os.remove(path)
    except OSError:
        pass


def load_ipython_extension(ipython):  # noqa: ARG001 (IPython's extension API)
    """`--ext kguard.connection` / `%load_ext kguard.connection`."""
    apply()

"""Inside a guarded kernel, everything that reports a connection file names
kguard's frontend file (the one the client started kguard with), never the
inner kernel's private file: `ipykernel.get_connection_file()`,
`get_connection_info()`, `%connect_info`, and therefore what
`jupyter console --existing` would be given. A second client using the
reported file reaches the kernel through kguard."""
import json
import os
import subprocess

from jupyter_client import BlockingKernelClient

from kg_integration_helpers import KGUARD, Collector, stdout_of

REPORT = ("import json as _j, ipykernel.connect as _c\n"
          "print(_j.dumps({'file': _c.get_connection_file(),"
          " 'info': _c.get_connection_info(unpack=True)}, default=str))\n"
          "del _j, _c")


def _report(col):
    reply, msgs = col.run(REPORT)
    assert reply["content"]["status"] == "ok", reply["content"]
    return json.loads(stdout_of(msgs))


def test_reported_file_is_the_frontend_file(env):
    env.spec()
    km, kc = env.start()
    col = Collector(kc)
    rep = _report(col)
    assert rep["file"] == os.path.realpath(km.connection_file)
    assert rep["info"]["shell_port"] == km.shell_port
    assert rep["info"]["transport"] == "tcp"

    reply, msgs = col.run("%connect_info")
    assert reply["content"]["status"] == "ok"
    out = stdout_of(msgs)
    assert '"shell_port": %d' % km.shell_port in out, out
    shown = {"--existing " + km.connection_file,        # the basename when in the runtime dir
             "--existing " + os.path.basename(km.connection_file)}
    assert any(s + "\n" in out for s in shown), out
    assert "kguard-" not in out, out    # nothing of kguard's private runtime dir

    # A kernel started from this one (nbclient inside a notebook) must not inherit the hook.
    reply, msgs = col.run("import os as _o; print(sorted(k for k in _o.environ if k in "
                          "('PYTHONSTARTUP', 'KGUARD_FRONTEND_CONNECTION_FILE'))); del _o")
    assert stdout_of(msgs) == "[]\n"


def test_second_client_from_reported_file_goes_through_kguard(env):
    env.spec()
    km, kc = env.start()
    col = Collector(kc)
    col.run("shared = 41")
    path = _report(col)["file"]
    kc2 = BlockingKernelClient(connection_file=path)
    kc2.load_connection_file()
    kc2.start_channels()
    try:
        kc2.wait_for_ready(timeout=30)
        col2 = Collector(kc2)
        reply, msgs = col2.run("print(shared + 1)")
        assert reply["content"]["status"] == "ok"
        assert stdout_of(msgs) == "42\n"
        # kguard answers `%kguard` itself: only a client going through the gate sees it.
        reply, msgs = col2.run("%kguard status")
        assert "state READY" in stdout_of(msgs)
    finally:
        kc2.stop_channels()


def test_user_pythonstartup_still_runs_and_no_names_leak(env, tmp_path):
    startup = tmp_path / "mystartup.py"
    startup.write_text("USER_STARTUP_RAN = 'yes'\n")
    env.spec(env={"PYTHONSTARTUP": str(startup)})
    km, kc = env.start()
    col = Collector(kc)
    reply, msgs = col.run("print(USER_STARTUP_RAN, sorted(n for n in dir() "
                          "if n in ('kguard', 'connection', 'os', 'apply')))")
    assert reply["content"]["status"] == "ok", reply["content"]
    assert stdout_of(msgs) == "yes []\n"
    # Processes the kernel starts see the user's environment, not kguard's hook.
    reply, msgs = col.run("import os as _o; print(_o.environ.get('PYTHONSTARTUP'), "
                          "[k for k in _o.environ if k in ('KGUARD_FRONTEND_CONNECTION_FILE', "
                          "'KGUARD_USER_PYTHONSTARTUP')]); del _o")
    assert stdout_of(msgs) == "%s []\n" % startup
    assert _report(col)["file"] == os.path.realpath(km.connection_file)


def test_still_the_frontend_file_after_a_restart(env):
    env.spec()
    km, kc = env.start()
    col = Collector(kc)
    pid1 = _pid(col)
    r = subprocess.run([KGUARD, "restart", "-f", km.connection_file], capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert _pid(col) != pid1
    assert _report(col)["file"] == os.path.realpath(km.connection_file)
    assert os.path.exists(km.connection_file)   # the old inner kernel did not remove it


def _pid(col):
    reply, msgs = col.run("import os as _o; print(_o.getpid()); del _o")
    assert reply["content"]["status"] == "ok"
    return int(stdout_of(msgs))


def test_startup_hands_back_the_users_environment():
    """kguard.connection.startup() outside a kernel: nothing to apply, but the
    environment children inherit is the user's (a table of cases)."""
    import sys
    sys.path.insert(0, os.path.join(os.environ.get("KGUARD_SOURCE_DIR", "../.."), "python"))
    from kguard import connection
    cases = [
        ({"KGUARD_FRONTEND_CONNECTION_FILE": "/f.json", "PYTHONSTARTUP": "/k/ipython_startup.py",
          "KGUARD_USER_PYTHONSTARTUP": "/home/u/s.py"}, "/home/u/s.py", {"PYTHONSTARTUP": "/home/u/s.py"}),
        ({"KGUARD_FRONTEND_CONNECTION_FILE": "/f.json", "PYTHONSTARTUP": "/k/ipython_startup.py"},
         None, {}),
        ({"OTHER": "1"}, None, {"OTHER": "1"}),
    ]
    for env, ret, after in cases:
        assert connection.startup(environ=env) == ret
        assert env == after
    try:
        connection.frontend_connection_file({"KGUARD_FRONTEND_CONNECTION_FILE": "rel.json"})
        raise AssertionError("a relative path was accepted")
    except ValueError as e:
        assert "absolute" in str(e)

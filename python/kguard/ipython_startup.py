# kguard's PYTHONSTARTUP for guarded IPython kernels (see kguard/connection.py).
# IPython runs this file in the user's namespace, so it binds no names of its
# own: it makes the kernel report kguard's connection file, then runs the
# user's own PYTHONSTARTUP (kept by kguard in KGUARD_USER_PYTHONSTARTUP).
__import__("kguard.connection").connection.apply()
if __import__("os").environ.get("KGUARD_USER_PYTHONSTARTUP"):
    exec(compile(open(__import__("os").environ["KGUARD_USER_PYTHONSTARTUP"], "rb").read(),
                 __import__("os").environ["KGUARD_USER_PYTHONSTARTUP"], "exec"))

# kguard's PYTHONSTARTUP for guarded IPython kernels (see kguard/connection.py).
# IPython runs this file in the user's namespace, so it binds no names of its
# own: it makes the kernel report kguard's connection file, restores the
# environment the user set, then runs the user's own PYTHONSTARTUP, if any.
if __import__("kguard.connection").connection.startup():
    exec(compile(open(__import__("os").environ["PYTHONSTARTUP"], "rb").read(),
                 __import__("os").environ["PYTHONSTARTUP"], "exec"))

"""kguard's log lines in a captured output, with their times: shared by the
harnesses that split a fault or a restart into parts (detect.py, resume.py
here; bench/doctor/bench_restart.py imports it by path)."""
import datetime
import re

LOG = re.compile(r"^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3})Z kguard\[\d+\] \w: (.*)$")


def log_times(out):
    """(epoch seconds, message) of each kguard log line in out."""
    rows = []
    for line in out.splitlines():
        m = LOG.match(line)
        if m:
            t = datetime.datetime.strptime(m.group(1), "%Y-%m-%dT%H:%M:%S.%f")
            rows.append((t.replace(tzinfo=datetime.timezone.utc).timestamp(), m.group(2)))
    return rows

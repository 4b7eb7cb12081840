"""kguard's helper for guarded notebooks: sealed checkpoints and input checks.

    import kguard
    r = kguard.resume()              # after a restart: what kguard restored
    if r: state = r.load()           # torch.load of r.dir/state.pt
    kguard.check_targets(y, classes) # before y moves to the device
    kguard.save(state, step)         # torch.save + device sync + kguard seal
    kguard.snapshot(state, step)     # the same into kguard's memory (restored first)
    kguard.step(step)                # under kguard exec: this step is done

Standard library plus torch only; kguard puts this package on the guarded
kernel's PYTHONPATH, so nothing needs installing.
"""
from .checkpoint import PendingSeal, Resume, check_targets, resume, save
from .pace import step
from .snapshot import Snapshot, SnapshotRefused, snapshot

__all__ = ["save", "snapshot", "resume", "step", "check_targets", "Resume", "PendingSeal",
           "Snapshot", "SnapshotRefused"]

"""What the conversion tests share: a kill -9 at a few moments during
`waste convert`, then a rerun to completion, must leave exactly the files of
an uninterrupted conversion (the converter's ledger resumes; container-v0's
writer publishes atomically)."""
import os
import signal
import subprocess
import time


def assert_kill_and_resume_byte_identical(case, cli, src, reference, out, options):
    """case: a unittest.TestCase; reference: an uninterrupted conversion of src
    with the same options; out: a fresh path for the interrupted one."""
    for delay in (0.05, 0.2, 0.4):
        proc = subprocess.Popen([cli, "convert", src, out, *options], stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)
        time.sleep(delay)
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
    done = subprocess.run([cli, "convert", src, out, *options], capture_output=True, text=True, timeout=600)
    case.assertEqual(done.returncode, 0, done.stderr)
    for name in sorted(os.listdir(reference)):
        path = os.path.join(reference, name)
        if os.path.isfile(path):
            with open(path, "rb") as a, open(os.path.join(out, name), "rb") as b:
                case.assertEqual(a.read(), b.read(), f"{name} differs after kill -9 and resume")

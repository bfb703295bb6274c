"""A training stage keeps the memory it frees for its next step: glibc would hand every freed block
over 32 MB back to the kernel and page-fault it in again at the next step (TRL's log-prob tiles are
such blocks, hundreds of MB per step), which was 45% of a tiny-model step's wall time on 2 cores."""

from __future__ import annotations

import subprocess
import sys
import textwrap

SCRIPT = textwrap.dedent("""
    import resource, sys
    from training.base_config import StageConfig
    from training.stage_common import start_stage

    def faults_of_a_big_buffer():
        before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        buffer = b"x" * (200 << 20)  # malloc'd and written: every page is touched
        del buffer
        return resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before

    faults_of_a_big_buffer()
    default = faults_of_a_big_buffer()  # the same size again: mapped and faulted again
    start_stage(StageConfig(model="tiny", output_dir=sys.argv[1]), stage="sft")
    faults_of_a_big_buffer()
    kept = faults_of_a_big_buffer()  # reused
    print(default, kept)
""")


def test_a_stage_reuses_the_big_blocks_it_freed_instead_of_faulting_them_in_again(tmp_path):
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(tmp_path / "run")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    default, kept = map(int, done.stdout.split())
    pages = (200 << 20) // 4096
    assert default > pages * 0.9, (default, kept)  # each allocation was page-faulted in again
    assert kept < pages * 0.1, (default, kept)

"""The Ray suite's cluster: a head and two worker nodes on this machine (Ray's own
`ray.cluster_utils.Cluster`: a raylet per node, separate worker processes), shared by the module.
Tasks and actors are placed on a node by its custom resource (`node_a`, `node_b`).

Native work is found where an operator would find it: every job of these tests is named, and a
named job names its thread (`/proc/<pid>/task/<tid>/comm`), so a loop left running on any node
shows as a thread of that name in some process of the machine.
"""

import os
import pathlib
import time

import pytest

ray = pytest.importorskip("ray")

from ray.cluster_utils import Cluster  # noqa: E402

# Generous bounds for a busy 2-core machine running three Ray nodes.
STOP_WITHIN = 5.0  # a cancelled native loop is gone within this
SETTLE = 60.0  # a worker or an actor starts within this


@pytest.fixture(scope="session")
def cluster():
    cluster = Cluster(
        initialize_head=True,
        head_node_args={"num_cpus": 1, "include_dashboard": False},
    )
    cluster.add_node(num_cpus=2, resources={"node_a": 1000})
    cluster.add_node(num_cpus=2, resources={"node_b": 1000})
    cluster.wait_for_nodes()
    ray.init(address=cluster.address, log_to_driver=False)
    try:
        yield cluster
    finally:
        ray.shutdown()
        cluster.shutdown()


def threads_named(name):
    """`(pid, tid)` of every thread of the machine whose name is `name` (15 bytes at most)."""
    found = []
    for task in pathlib.Path("/proc").glob("[0-9]*/task/[0-9]*"):
        try:
            comm = (task / "comm").read_text().rstrip("\n")
        except OSError:
            continue  # it ended while we looked
        if comm == name:
            found.append((int(task.parent.parent.name), int(task.name)))
    return found


def wait_until(condition, timeout, every=0.001):
    """Polls `condition` until it holds or `timeout` seconds pass: the seconds it took, or
    None."""
    start = time.monotonic()
    while not condition():
        if time.monotonic() - start > timeout:
            return None
        time.sleep(every)
    return time.monotonic() - start


def running(name):
    """Waits until a native loop named `name` runs; the pid of its process."""
    assert wait_until(lambda: threads_named(name), SETTLE), f"no thread named {name!r} started"
    (pid, _tid), = threads_named(name)
    return pid


def stopped_within(name, timeout=STOP_WITHIN):
    """Seconds until no thread named `name` runs on any node (None if one still ran)."""
    return wait_until(lambda: not threads_named(name), timeout)


def alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def report(path, seconds):
    """Prints a cancel-to-stop time, in milliseconds, for the suite's log."""
    print(f"ray {path}: cancel to native stop {seconds * 1000:.1f} ms")

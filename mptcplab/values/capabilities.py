"""What a backend can do beyond the basics (``Backend.capabilities``), each asked where it
matters; which link emulators it runs is ``Backend.emulators``. A leaf, so that plug-ins
(probes) can ask without importing the backends."""

#: spawned processes are the node's own host processes: /proc/<pid> describes them
#: (probes/monitor.py reads the monitor's netlink subscription there)
CAP_NODE_PIDS = "node-pids"
#: mptcplab-mbox (native/mbox) can run in nodes (net/plan.refuse_unsupported)
CAP_MBOX = "rewriting-middleboxes"

__all__ = ["CAP_MBOX", "CAP_NODE_PIDS"]

"""Moved to mptcplab/supervise.py (general process supervision); kept importable."""

from ..supervise import DaemonDied, DaemonError, DaemonNotReady, RunningDaemon, Supervisor, proc_cpu_seconds

__all__ = ["DaemonDied", "DaemonError", "DaemonNotReady", "RunningDaemon", "Supervisor", "proc_cpu_seconds"]

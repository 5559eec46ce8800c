"""mptcplab: rerun published Multipath TCP experiments on the kernel you have."""

__version__ = "0.1.0"

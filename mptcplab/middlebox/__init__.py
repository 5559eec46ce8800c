"""Middleboxes: what a router does to the MPTCP segments it forwards, and a host's filters
on what it sends and receives (the kernel selftests' iptables rules).

nft.py: the kinds nftables can express (strip, drop, NAT, a strict stateful firewall, a
dropped ADD_ADDR, a blocked address).
The NFQUEUE rewriter (ISN rewriting, payload modification) lives beside it (rewrite.py).
"""

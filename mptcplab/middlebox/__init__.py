"""Middleboxes on routers: what a router does to the MPTCP segments it forwards.

nft.py: the kinds nftables can express (strip, drop, NAT, a strict stateful firewall).
The NFQUEUE rewriter (ISN rewriting, payload modification) lives beside it (rewrite.py).
"""

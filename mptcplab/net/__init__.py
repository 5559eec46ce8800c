"""The commands that configure a scenario's network, generated apart from running them:
config.py (interfaces, addresses, routes, sysctls, offloads, the firewall), net/mptcp.py (MPTCP
endpoints and limits), bonding.py (the bonding driver's balance-rr baseline) and net/plan.py, which
orders them with the backend's node and link commands into one plan: what a run executes and
what its dry run prints."""

# make reproductions: docs/reproductions.md and each lab doc's section between
# <!-- reproductions:begin --> and <!-- reproductions:end -->, generated from the records in
# campaigns/records/ (restored into a temporary directory, merged, judged by this engine).
#
#   make reproductions          rewrite the documents from the records
#   make reproductions-check    exit 1, one line per file, when the documents disagree with them
.PHONY: reproductions reproductions-check

reproductions: bootstrap
	$(VENV)/bin/mptcplab reproductions

reproductions-check: bootstrap
	$(VENV)/bin/mptcplab reproductions --check

"""Traffic tools of the project's own (native programs driven from Python): argument
builders, output readers and their analysis. Each tool is a subpackage."""

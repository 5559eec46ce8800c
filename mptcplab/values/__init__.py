"""The value types every lab file and plug-in shares: the strict base model, names,
endpoint, address and sysctl fields, unit checks (fields.py: the rules; types.py: the
annotated types and the tools' limits). A leaf: the lab schema and the plug-ins (traffic
kinds, checks, probes, controllers) build on it."""

"""Finding checks as plug-ins (issue 34): one module per kind of check in published.yml's
``expect`` (its schema class, its evaluation, what it needs of the lab), listed once in
registry.py. The lab schema, the loader, scenario selection, the metric check, the findings
and the audit read the registry and name no check class.

The checks build on the value types (mptcplab/values/), the record model and the metric
declarations only, never on the lab schema: the lab schema (lab/schema/published.py) builds
its ``expect`` union from this package's registry, so checks sit below it. stats.py: the
intervals behind every verdict.
"""

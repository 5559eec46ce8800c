"""Finding checks as plug-ins (issue 34): one module per kind of check in published.yml's
``expect`` (its schema class, its evaluation, what it needs of the lab), listed once in
registry.py. The lab schema, the loader, scenario selection, the metric check, the findings
and the audit read the registry and name no check class.

The lab schema (lab/schema/published.py) builds its ``expect`` union from the registry, and
the check modules build on lab/schema/base.py: importing the schema package first lets
``import mptcplab.checks...`` come before or after it without a partly initialized module.
"""

from ..lab import schema as _schema  # noqa: F401  (import order; see above)

"""What every lab schema module shares: the strict base model, name and sysctl field types,
and the limits of the tools a lab's values end up in."""

from __future__ import annotations

from typing import Annotated

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field

from .fields import NAME_RE, address_ref, endpoint_ref, sysctl_key, sysctl_value

Name = Annotated[str, Field(pattern=NAME_RE)]

#: limits of the tools a lab's values end up in (iperf3 3.12's own checks, the delay line's)
IPERF3_MAX_SECONDS = 86400
IPERF3_MAX_WINDOW = 512 * 1024 * 1024
IPERF3_MAX_LENGTH = 1024 * 1024
MAX_DELAY_SECONDS = 3600.0


SysctlKey = Annotated[str, AfterValidator(sysctl_key)]
SysctlValue = Annotated[str | int, BeforeValidator(sysctl_value)]
Sysctls = dict[SysctlKey, SysctlValue]


EndpointRef = Annotated[str, AfterValidator(endpoint_ref)]
AddressRef = Annotated[str, AfterValidator(address_ref)]
#: kernel names of congestion controls and MPTCP schedulers (TCP_CA_NAME_MAX, MPTCP_SCHED_NAME_MAX: 16)
KernelName = Annotated[str, Field(pattern=r"^[a-z0-9][a-z0-9_-]{0,14}$")]



class Strict(BaseModel):
    """A lab file's model: an unknown key is an error (a typo must not pass silently)."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class Lenient(BaseModel):
    """A record's model (rep.json, summary.json, a kind's numbers): readers ignore what they
    do not know (a newer minor addition); the runner's extra per-repetition facts (firewall
    counters, capture stats) are kept, see record/model/repetition.py."""

    model_config = ConfigDict(extra="ignore", populate_by_name=True)

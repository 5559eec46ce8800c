"""Did a subflow contribute to the transfer? The rule behind "MPTCP verified".

An established subflow that got a few bytes through is not a multipath result: a PMTUD black
hole can let one probe-sized segment through and then nothing for 20 s (observed: 1,024 bytes
acknowledged out of 240 MB, share 0.0005). A slow path beside a fast one is a multipath result
even at a 1% share (4 Mbit/s beside 400 Mbit/s). So the rule compares what a subflow delivered
with what its path could be expected to deliver, not with a fixed share:

* delivered = the highest cumulative ACK the receiver sent on the subflow (bytes that arrived),
  or the bytes sent when the capture shows no ACK in that direction;
* floor: delivered >= MIN_SEGMENTS full-sized segments (of 1448 bytes, Ethernet's MSS with
  timestamps) - less than that is a handshake's worth of probing, not a transfer;
* where the lab configures a rate on every expected path: delivered >= MIN_FAIR_FRACTION of
  the path's expected bytes, i.e. of (its rate / the sum of the expected paths' rates) x the
  connection's delivered bytes. A 4 Mbit/s path beside a 400 Mbit/s one is expected to carry
  ~1% and must carry >= 0.1%; the black-hole case above carries 0.0004% of an expected 50%;
* otherwise (rates unknown, so no expected share): the receiver's ACKs on the subflow kept
  advancing over >= MIN_SPAN_FRACTION of the transfer (first data byte of the connection to its
  last acknowledged byte): a subflow that delivered a burst at the start and then stalled
  fails, a slow one that delivered all along passes, whatever its volume.

A path the lab itself took out of use during the run (FlowSpec.retired_paths: the timeline cut
a link of the path or deleted its endpoint, or a controller demoted it by flagging its endpoint
backup, for the rest of the run; SubflowResult.retired_t) is judged over its time in use: it
counts when it delivered the floor (MIN_SEGMENTS full segments) and its data started before it
was retired. Its share is not compared: the paper's removal scenarios take the slow path away
because it carries little (a 400 ms path beside a 4 ms one carried 1.5% of a transfer that ran
on the fast path alone for its second half), and what it carried "while in use" would need the
connection's delivery before that instant, which the per-subflow numbers do not hold. The whole
delivery stands for the delivery before retirement: after it the path carries nothing (a cut
link drops the ACKs too; a deleted endpoint closes the subflow) or next to nothing (a backup
subflow is used only when no other can send). A path demoted before it carried the floor (a
controller acting within the first second: 5,696 bytes) still fails, with the time it was
retired. Retirement changes no path's expected share: the shares are the configured rates'
over all expected paths as before, so another path's bar is neither raised nor lowered by a
path the lab removed (its true share after the removal is higher; the lower bar is the side to
err on for a rule that separates "carried part" from "next to nothing"), and a lab without
retirements is judged as before.

A capture made elsewhere (FlowSpec.foreign, ``mptcplab analyze``) has no configured rates and
no steady bulk transfer to expect: the span rule assumes the lab's iperf3 run (a web session
may use its second subflow for one burst), so it is not applied. What one file can show:
the floor (a subflow that delivered under MIN_SEGMENTS full segments while its connection
delivered more did carry next to nothing: a black hole's signature), and only where the
connection itself delivered at least the floor; a smaller capture is too small to judge
(too_small), and every subflow that delivered data counts.

A backup subflow (MPTCP "backup" flag) by design carries nothing while the other paths work:
it counts when it is established. The thresholds are deliberately loose (a tenth of the fair
share, a fifth of the time): the rule separates "carried part of the transfer" from "carried
next to nothing", and it is not a performance verdict.
"""

from __future__ import annotations

from collections.abc import Sequence

from .model import FlowSpec, SubflowResult

MIN_SEGMENTS = 10
FULL_SEGMENT = 1448
MIN_FAIR_FRACTION = 0.1
MIN_SPAN_FRACTION = 0.2


def delivered(r: SubflowResult) -> int:
    """Bytes that arrived on the subflow (bytes sent when no ACK was captured)."""
    return r.bytes if r.acked_bytes is None else r.acked_bytes


def delivery_end(r: SubflowResult) -> float | None:
    return r.last_ack_advance_t if r.last_ack_advance_t is not None else r.last_data_t


def transfer_span(results: Sequence[SubflowResult]) -> tuple[float, float] | None:
    """(first data byte, last acknowledged byte) of the connection, seconds from t0."""
    starts = [r.first_data_t for r in results if r.first_data_t is not None]
    ends = [e for r in results if (e := delivery_end(r)) is not None]
    if not starts or not ends:
        return None
    return min(starts), max(ends)


def expected_shares(spec: FlowSpec) -> dict[str, float]:
    """Path -> expected share from the configured rates; empty unless every non-backup
    expected path has a rate."""
    paths = [p for p in spec.expected_paths if p not in spec.backup_paths]
    rates = {p: spec.path_rates_bps.get(p) for p in paths}
    if not paths or any(not r for r in rates.values()):
        return {}
    total = sum(r for r in rates.values() if r)
    return {p: r / total for p, r in rates.items() if r}


def assess(results: Sequence[SubflowResult], spec: FlowSpec) -> None:
    """Set ``expected_share`` and ``contributed`` on every subflow of the data connection."""
    total = sum(delivered(r) for r in results)
    shares = expected_shares(spec)
    span = transfer_span(results)
    for r in results:
        got = delivered(r)
        r.expected_share = shares.get(r.path) if r.path is not None else None
        rate = spec.path_rates_bps.get(r.path) if r.path is not None else None
        r.path_rate_mbps = rate / 1e6 if rate else None
        if spec.foreign:
            r.contributed = r.bytes > 0 and (got >= MIN_SEGMENTS * FULL_SEGMENT or too_small(results))
        elif got < MIN_SEGMENTS * FULL_SEGMENT or r.bytes <= 0:
            r.contributed = False
        elif r.retired_t is not None:
            # judged over its time in use: the floor, delivered from data sent before retirement
            r.contributed = r.first_data_t is None or r.first_data_t < r.retired_t
        elif r.expected_share is not None:
            r.contributed = got >= MIN_FAIR_FRACTION * r.expected_share * total
        elif span is not None and r.first_data_t is not None and (end := delivery_end(r)) is not None:
            length = span[1] - span[0]
            r.contributed = length <= 0 or (end - r.first_data_t) >= MIN_SPAN_FRACTION * length
        else:
            r.contributed = True   # no times at all: the volume floor is all there is


def too_small(results: Sequence[SubflowResult]) -> bool:
    """The connection delivered less than the floor in all: the floor cannot tell a subflow
    that probed from one that carried its part (foreign captures)."""
    return sum(delivered(r) for r in results) < MIN_SEGMENTS * FULL_SEGMENT


def shortfall(r: SubflowResult, results: Sequence[SubflowResult]) -> str:
    """Why ``r`` did not count, in words, with the numbers."""
    got = delivered(r)
    total = sum(delivered(x) for x in results)
    floor = f"below the floor of {MIN_SEGMENTS} full segments ({MIN_SEGMENTS * FULL_SEGMENT} bytes)"
    if r.retired_t is not None:
        by = f" ({r.retired_by})" if r.retired_by else ""
        when = f"before it was retired at t={r.retired_t:.3f} s{by}"
        if got < MIN_SEGMENTS * FULL_SEGMENT:
            return f"{floor} {when}"
        return f"its data started only at t={r.first_data_t:.3f} s, not {when}"
    if got < MIN_SEGMENTS * FULL_SEGMENT:
        return floor
    if r.expected_share is not None:
        return (f"below {MIN_FAIR_FRACTION:g} of its expected share {r.expected_share:.3f} "
                f"(at least {int(MIN_FAIR_FRACTION * r.expected_share * total)} bytes)")
    span = transfer_span(results)
    if span is not None:
        return (f"its ACKs advanced over less than {MIN_SPAN_FRACTION:g} of the transfer "
                f"({span[1] - span[0]:.3f} s)")
    return "rule not met"

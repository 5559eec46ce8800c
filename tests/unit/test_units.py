import pytest

from mptcplab.units import UnitError, is_time, parse_fraction, parse_rate, parse_size, parse_time


@pytest.mark.parametrize("text,bps", [("100mbit", 100_000_000), ("8Mbit", 8_000_000), ("400mbit", 400_000_000),
                                      ("1gbit", 10**9), ("2.5mbit", 2_500_000), ("1mbps", 8_000_000), (1000, 1000)])
def test_rates(text, bps):
    assert parse_rate(text) == bps


@pytest.mark.parametrize("text,s", [("40ms", 0.04), ("2s", 2.0), ("150us", 150e-6), ("0.5", 0.5), (3, 3.0)])
def test_times(text, s):
    assert parse_time(text) == pytest.approx(s)


@pytest.mark.parametrize("text,b", [("1MiB", 1 << 20), ("500KB", 500_000), ("4MB", 4_000_000), (1024, 1024)])
def test_sizes(text, b):
    assert parse_size(text) == b


def test_fractions():
    assert parse_fraction("1%") == pytest.approx(0.01)
    assert parse_fraction(0.2) == pytest.approx(0.2)
    with pytest.raises(UnitError):
        parse_fraction("150%")


@pytest.mark.parametrize("bad", ["fast", "100 furlongs", "-5ms", "", True])
def test_bad_values_name_the_problem(bad):
    with pytest.raises(UnitError) as e:
        parse_time(bad)
    assert "time" in str(e.value)


def test_queue_time_vs_size():
    assert is_time("80ms") and not is_time("150KB") and not is_time(1000)

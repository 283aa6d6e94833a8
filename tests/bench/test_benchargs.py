"""Unit tests of the benchmarks' shared option checks (benchargs)."""

from __future__ import annotations

import argparse

import pytest

from benchargs import check_ranges, choose, choose_models

MODELS = ("ixgbe", "igb", "e1000e", "virtio-net")


def parser() -> argparse.ArgumentParser:
    return argparse.ArgumentParser(prog="bench")


def error(capsys: pytest.CaptureFixture[str], exc: pytest.ExceptionInfo[SystemExit]) -> str:
    """The message of a usage error: exit status 2, usage and message on stderr."""
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("usage: bench")
    return err.splitlines()[-1]


def test_check_ranges_accepts_the_bounds() -> None:
    check_ranges(parser(), argparse.Namespace(reps=1, trace_seconds=60), ("reps", 1, 50), ("trace_seconds", 0, 60))
    check_ranges(parser(), argparse.Namespace(reps=50))


@pytest.mark.parametrize(
    "values,message",
    [
        ({"reps": 0, "seconds": 500}, "bench: error: --reps must be between 1 and 50, got 0"),
        ({"reps": 5, "seconds": 500}, "bench: error: --seconds must be between 1 and 120, got 500"),
        ({"reps": 51, "seconds": 0}, "bench: error: --reps must be between 1 and 50, got 51"),
    ],
)
def test_check_ranges_refuses(values: dict[str, int], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        check_ranges(parser(), argparse.Namespace(**values), ("reps", 1, 50), ("seconds", 1, 120))
    assert error(capsys, exc) == message


def test_check_ranges_names_the_option_with_dashes(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        check_ranges(parser(), argparse.Namespace(ixgbe_rx_wthresh=128), ("ixgbe_rx_wthresh", 0, 127))
    assert error(capsys, exc) == "bench: error: --ixgbe-rx-wthresh must be between 0 and 127, got 128"


def test_choose_keeps_order_and_drops_repeats() -> None:
    assert choose(parser(), " igb, e1000e,,igb ", MODELS, "model") == ["igb", "e1000e"]
    assert choose(parser(), ",", MODELS, "model") == []


def test_choose_refuses_unknown_names(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        choose(parser(), "b2b-tcp,vf-to-vf", ("b2b-tcp", "b2b-udp"), "workload")
    assert error(capsys, exc) == "bench: error: unknown workload(s) ['vf-to-vf']; choose from ['b2b-tcp', 'b2b-udp']"


def test_choose_models_puts_the_subject_first() -> None:
    assert choose_models(parser(), "e1000e,igb", MODELS, "ixgbe") == ["ixgbe", "e1000e", "igb"]
    assert choose_models(parser(), "igb,ixgbe,igb", MODELS, "ixgbe") == ["igb", "ixgbe"]
    assert choose_models(parser(), "", MODELS, "ixgbe") == ["ixgbe"]


def test_choose_models_refuses_unknown_models(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        choose_models(parser(), "igb,rtl8139", MODELS, "ixgbe")
    assert error(capsys, exc) == (
        "bench: error: unknown model(s) ['rtl8139']; choose from ['ixgbe', 'igb', 'e1000e', 'virtio-net']"
    )

"""The accelerator catalog: every part loads with positive, cited figures; names are checked."""

from __future__ import annotations

import json

import pytest

from archscope.hardware import (CPU, DTYPES, UnknownHardwareError, catalog, catalog_part,
                                get_hardware, hardware_names)

# The parts issue 13 names, by the names it uses.
REQUIRED = ("h100-sxm", "h100-pcie", "h200", "b200", "a100-40gb", "a100-80gb", "l40s", "l4",
            "rtx-4090", "rtx-5090", "mi300x")


def test_the_issue_parts_are_all_there():
    assert set(REQUIRED) <= set(catalog())
    assert hardware_names()[-1] == CPU


@pytest.mark.parametrize("name", REQUIRED)
def test_every_part_loads_with_positive_numbers_and_a_source(name):
    part = catalog_part(name)
    assert part.memory_bytes > 0 and part.memory_bandwidth > 0
    assert part.interconnect and part.interconnect_bandwidth > 0
    assert part.flops("bf16") > 0  # every part has a 16-bit tensor path
    assert 0 < part.flops("fp32") < part.flops("bf16")  # and a plain fp32 peak, below it
    assert all(v > 0 for v in part.peak_flops.values())
    assert set(part.peak_flops) <= set(DTYPES)
    assert part.source_title and part.source_url.startswith("https://")
    assert part.confirmed_via, "each datasheet figure is confirmed by a page found in research"
    # A dtype is either priced, or said to be unsupported, or said to be not found: never silent.
    for dtype in ("fp8", "int8", "fp4"):
        assert (dtype in part.peak_flops) + (dtype in part.unsupported) + (dtype in part.missing) \
            == 1, (name, dtype)


def test_units_are_converted_once_from_the_datasheet_figures():
    h100 = catalog_part("h100-sxm")
    # 80 GB (10^9), 3,350 GB/s, 1,979 TFLOPS BF16 with sparsity -> 989.5 dense, NVLink 900 GB/s.
    assert h100.memory_bytes == 80_000_000_000
    assert h100.memory_bandwidth == 3.35e12
    assert h100.flops("bf16") == 989.5e12 and h100.flops("fp8") == 1979e12
    assert h100.interconnect == "NVLink" and h100.interconnect_bandwidth == 900e9
    assert h100.one_way_bandwidth == 450e9
    assert catalog_part("mi300x").interconnect == "Infinity Fabric"
    assert catalog_part("l4").interconnect.startswith("PCIe")


def test_lower_precision_is_never_slower_on_one_part():
    for part in catalog().values():
        rates = [part.flops(d) for d in ("fp32", "bf16", "fp8", "fp4") if part.flops(d) is not None]
        assert rates == sorted(rates), part.name


def test_a_figure_no_source_gave_is_null_and_said_so():
    rtx5090 = catalog_part("rtx-5090")
    assert rtx5090.flops("int8") is None and "int8" in rtx5090.missing
    assert "INT8" in rtx5090.notes
    assert catalog_part("a100-80gb").flops("fp8") is None  # Ampere has no fp8 tensor cores
    assert "fp8" in catalog_part("a100-80gb").unsupported


@pytest.mark.parametrize("name, close", [("h100", "h100-sxm"), ("H100-SXN", "h100-sxm"),
                                         ("mi300", "mi300x"), ("rtx4090", "rtx-4090")])
def test_unknown_names_are_refused_with_a_did_you_mean(name, close):
    with pytest.raises(UnknownHardwareError) as err:
        get_hardware(name)
    message = str(err.value)
    assert "did you mean" in message and repr(close) in message and "known:" in message


def test_names_are_case_insensitive():
    assert get_hardware("H100-SXM") is catalog_part("h100-sxm")


def test_the_cpu_is_measured_once_per_process():
    cpu = get_hardware("cpu")
    assert cpu.measured and cpu.name == "cpu"
    assert cpu.memory_bytes > 0 and cpu.memory_bandwidth > 0
    assert cpu.flops("fp32") > 0 and cpu.flops("bf16") > 0
    assert "measured" in cpu.source_title and "achieved" in cpu.notes
    assert get_hardware("cpu") is cpu  # cached: one command probes once


def test_the_command_lists_the_catalog(run_cli):
    code, out, err = run_cli("hardware")
    assert code == 0, err
    for name in REQUIRED:
        assert f"  {name} " in out
    assert "nvidia-tensor-core-gpu-datasheet" in out and "amd-instinct-mi300x" in out


def test_the_command_prints_json_for_chosen_parts(run_cli):
    code, out, err = run_cli("hardware", "h100-sxm", "l4", "--format", "json")
    assert code == 0, err
    rows = json.loads(out)
    assert [r["name"] for r in rows] == ["h100-sxm", "l4"]
    assert rows[0]["memory_bytes"] == 80_000_000_000
    assert rows[0]["dense_flops_per_s"]["bf16"] == 989.5e12
    assert rows[0]["interconnect"] == {"kind": "NVLink", "bandwidth_bytes_per_s": 900e9}
    assert rows[1]["source"]["url"].startswith("https://")


def test_the_command_refuses_an_unknown_part_with_exit_2(run_cli):
    code, out, err = run_cli("hardware", "h100")
    assert code == 2 and out == ""
    assert "unknown hardware 'h100'" in err and "h100-sxm" in err and "Traceback" not in err


def test_probe_cpu_adds_the_measured_cpu(run_cli):
    code, out, err = run_cli("hardware", "l4", "--probe-cpu", "--format", "json")
    assert code == 0, err
    rows = json.loads(out)
    assert [r["name"] for r in rows] == ["l4", "cpu"] and rows[1]["measured"] is True


@pytest.mark.parametrize("device, part", [
    ("NVIDIA H100 80GB HBM3", "h100-sxm"), ("NVIDIA H100 PCIe", "h100-pcie"),
    ("NVIDIA H200", "h200"), ("NVIDIA L40S", "l40s"), ("NVIDIA L4", "l4"),
    ("NVIDIA A100-SXM4-80GB", "a100-80gb"), ("NVIDIA GeForce RTX 4090", "rtx-4090"),
    ("AMD Instinct MI300X", "mi300x"), ("NVIDIA L40", None), ("NVIDIA A100 80GB PCIe", None)])
def test_a_cuda_device_name_finds_its_part_by_whole_words(device, part):
    from archscope.hardware.catalog import part_for_device

    found = part_for_device(device)
    assert (found.name if found else None) == part


def test_profiles_roofline_reads_the_catalog():
    """One home for datasheet figures: profile's presets are the catalog's parts."""
    from archscope.measure import roofline

    for part in catalog().values():
        hw = roofline.preset(part.name)
        assert hw.bandwidth == part.memory_bandwidth and hw.flops_per_s == part.peak_flops
    assert roofline.preset("h100-sxm").peak_flops("fp32") == 67e12
    assert roofline.preset_for_gpu("NVIDIA H200").name == "h200"


def test_profile_refuses_an_unknown_hardware_name_before_building(run_cli):
    code, _, err = run_cli("profile", "gpt2", "--hardware", "h100")
    assert code == 2 and "h100-sxm" in err and "Traceback" not in err

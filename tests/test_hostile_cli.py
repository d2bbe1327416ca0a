"""Hostile input, secrets and faults.

- the table of bad command-line options, profiles, stores, samples, signals and kills
  (bench/hostile/cli_cases.py, run by bench/hostile/__init__.py): every input gives one clean error line
  or the right behaviour; none a traceback, a hang or a silent wrong success;
- property tests (Hypothesis) of the one validation layer, the one name sanitiser, the one
  URL redaction and the seed-key derivation: any value, not only the ones in the table.
"""

from __future__ import annotations

import hashlib
import json
import math
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from bench import hostile as H
from bench.hostile import cli_cases as hostile_cli
from layoutbench import layout, profile, safety, validate
from layoutbench.build import fill_placeholders
from layoutbench.errors import LayoutbenchError

FAST = settings(max_examples=100, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.function_scoped_fixture])


def test_every_hostile_cli_input_is_one_clean_line_or_handled(tmp_path):
    rep = H.run_all([hostile_cli], tmp_path)["cli"]
    bad = "\n".join(f"{b['outcome']}: {b['case']}\n  {json.dumps({k: v for k, v in b.items() if k not in ('case', 'outcome')})[:1200]}"
                    for b in rep["bad"])
    assert not rep["bad"], f"{len(rep['bad'])} of {rep['tried']} hostile inputs not handled cleanly:\n{bad}"
    assert rep["tried"] >= 300 and rep["clean"] == rep["tried"]


def test_the_judge_tells_the_outcomes_apart():
    assert H.judge(2, "", "layoutbench: error: bad --seed\n") == "clean"
    assert H.judge(0, "", "") == "wrong-success"
    assert H.judge(1, "", "Traceback (most recent call last):\n  File x\nKeyError: 'a'\n") == "traceback"
    assert H.judge(2, "", "layoutbench: error: a\nlayoutbench: error: b\n") == "traceback"
    assert H.judge(2, "", "x.py:3: RuntimeWarning: overflow\nlayoutbench: error: a\n") == "traceback"
    assert H.judge(0, "ok", "", expect_ok=True, check=lambda o, e: o == "ok") == "clean"
    assert H.judge(2, "", "layoutbench: error: bad pw S3c\n", secrets=("S3c",)) == "leak"
    assert H.judge(0, "S3c", "", expect_ok=True, secrets=("S3c",)) == "leak"
    assert H.judge(0, "no", "", expect_ok=True, check=lambda o, e: o == "ok") == "wrong-success"


# -- the one URL redaction -----------------------------------------------------------------------------

password = st.text(st.characters(blacklist_categories=("Cs", "Cc", "Zs", "Zl", "Zp")), min_size=4, max_size=30)


@FAST
@given(pw=password)
@example(pw="p@ss@word")
@example(pw="a/b?c#d")
def test_redact_url_hides_any_password(pw):
    url = f"postgresql://user:{pw}@db.example.org:5432/results"
    shown = safety.redact_url(url)
    assert pw not in shown and "***" in shown and shown.startswith("postgresql://user:")
    q = f"postgresql://user@db.example.org/results?sslmode=disable&password={pw.replace('&', '')}"
    assert pw.replace("&", "") not in safety.redact_url(q).split("?", 1)[1]
    assert pw not in safety.redact_text(f"no history in {url}; run it first")
    assert all(piece not in safety.redact_text(f"could not resolve host '{piece}@db'", url)
               for piece in pw.split("@") if len(piece) >= 2)


def test_redact_url_keeps_a_url_without_secret():
    url = "postgresql://lb@/layoutbench?host=/tmp/x"
    assert safety.redact_url(url) == url


# -- the one name sanitiser ----------------------------------------------------------------------------

@FAST
@given(name=st.text(max_size=40))
@example(name="../../../x")
@example(name="..")
@example(name="a/../../b")
def test_a_safe_name_never_leaves_its_folder(name, tmp_path_factory):
    base = Path("/work/base")
    try:
        ok = safety.safe_name("profile name", name)
    except LayoutbenchError as e:
        assert "\n" not in str(e) and "not a safe name" in str(e)
        return
    p = (base / ok).resolve()
    assert p.parent == base and p.name == ok and not ok.startswith(".")


# -- the validation layer ------------------------------------------------------------------------------

@FAST
@given(v=st.floats(allow_nan=True, allow_infinity=True) | st.integers() | st.text(max_size=5) | st.booleans())
@example(v=float("nan"))
@example(v=0)
@example(v=-1)
@example(v="1")  # a string in a profile is refused, not converted (found by Hypothesis)
def test_a_timeout_is_accepted_exactly_when_finite_positive_and_at_most_a_week(v):
    expect = not isinstance(v, (bool, str)) and math.isfinite(v) and 0 < v <= validate.MAX_TIMEOUT
    try:
        got = validate.timeout("--timeout", v)
    except LayoutbenchError as e:
        assert not expect and "--timeout" in str(e) and "\n" not in str(e)
    else:
        assert expect and got == float(v)


@FAST
@given(v=st.floats(allow_nan=True, allow_infinity=True) | st.integers(-2, 2) | st.booleans())
@example(v=0.5)
@example(v=1e-300)
@example(v=1.0)
@example(v=0.9999)
def test_one_confidence_rule_and_one_message_wherever_it_is_given(v):
    """The command line and a bisection's settings (its log, a replay) accept the same values and
    refuse the others with the same line."""
    from layoutbench import bisect

    expect = not isinstance(v, bool) and math.isfinite(v) and 0.5 < v <= 0.9999
    said = []
    for check in (lambda: validate.options({"confidence": v}), lambda: bisect.Settings(kernel="k", confidence=v).check()):
        try:
            check()
        except LayoutbenchError as e:
            said.append(str(e))
    if expect:
        assert said == []
    else:
        assert len(said) == 2 and said[0] == said[1] and "> 0.5 and <= 0.9999" in said[0], said


@FAST
@given(seed=st.integers(), count=st.integers(1, validate.MAX_LAYOUTS))
@example(seed=2**63 - 2, count=8)
@example(seed=2**63, count=1)
def test_a_seed_is_accepted_exactly_when_every_seed_fits_64_bits(seed, count):
    try:
        validate.seed("--seed", seed, count)
    except LayoutbenchError:
        assert not (0 <= seed and seed + count - 1 <= 2**63 - 1)
    else:
        assert 0 <= seed and seed + count - 1 <= 2**63 - 1


@FAST
@given(words=st.lists(st.text(max_size=8), max_size=4))
def test_metric_names_split_commas_and_refuse_empty_names(words):
    try:
        names = validate.metric_names(tuple(words))
    except LayoutbenchError:
        assert any(not p.strip() for w in words for p in w.split(","))
        return
    if not words:
        assert names is None
    else:
        assert names and all(n and n == n.strip() and "," not in n for n in names)


@FAST
@given(a=st.integers(0, 10**60), b=st.integers(0, 10**60))
@example(a=10**46, b=10**46 + 1)  # 47 digits: cut to 64 bytes these shared one key
def test_seed_keys_are_one_to_one_and_unchanged_for_ordinary_seeds(a, b):
    if a != b:
        assert layout._key(f"layoutbench:order:{a}") != layout._key(f"layoutbench:order:{b}")
    if len(f"layoutbench:order:{a}") <= 64:  # every seed the CLI accepts: the layouts of before
        assert layout.keyed_rank(a, "x.o") == int.from_bytes(hashlib.blake2b(
            b"x.o", key=f"layoutbench:order:{a}".encode(), digest_size=8).digest(), "big")


@FAST
@given(shell=st.text(st.characters(blacklist_characters="{}"), max_size=20))
def test_braces_of_the_shell_are_left_alone(shell):
    cmd = "awk '{print $1}' " + shell + " ${HOME} {objdir}/x {nosuch}"
    assert fill_placeholders(cmd, {"objdir": "/o"}) == "awk '{print $1}' " + shell + " ${HOME} /o/x {nosuch}"


# -- profiles: any value of any setting is loaded or refused in one line --------------------------------

def _toml(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        return "nan" if math.isnan(v) else ("inf" if v > 0 else "-inf") if math.isinf(v) else repr(v)
    if isinstance(v, list):
        return "[" + ", ".join(_toml(x) for x in v) + "]"
    return json.dumps(v)


toml_value = st.recursive(st.booleans() | st.integers(-2**63, 2**63 - 1) | st.floats() | st.text(max_size=12),
                          lambda inner: st.lists(inner, max_size=3), max_leaves=6)
KEYS = ["args", "command", "success_exit", "miss_weight", "timeout", "i1", "perf", "pin", "collect", "kind",
        "image", "remote_dir"]


@settings(max_examples=150, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(key=st.sampled_from(KEYS), value=toml_value, table=st.sampled_from(["prog", "cg"]))
def test_any_target_setting_loads_typed_or_is_one_line(tmp_path, key, value, table):
    text = hostile_cli.BASE.replace(f"[targets.{table}]\n", f"[targets.{table}]\n{key} = {_toml(value)}\n", 1)
    f = tmp_path / "kernel.toml"
    f.write_text(text)
    try:
        p = profile.load(str(f))
    except LayoutbenchError as e:
        assert "\n" not in str(e).strip()
        return
    t = p.targets[table]
    s = t.settings
    assert math.isfinite(t.timeout) and t.timeout > 0
    if "args" in s:
        assert isinstance(s["args"], list) and not any(isinstance(w, (bool, list)) for w in s["args"])
    if "success_exit" in s:
        assert type(s["success_exit"]) is int and 0 <= s["success_exit"] <= 255
    if "miss_weight" in s:
        assert not isinstance(s["miss_weight"], bool) and math.isfinite(s["miss_weight"]) and s["miss_weight"] >= 0


@pytest.mark.parametrize("value", ['"1000"', "[true]", '"zero"'])
def test_a_string_where_a_list_or_number_belongs_names_file_table_and_key(tmp_path, value):
    f = tmp_path / "kernel.toml"
    key = "args" if value != '"zero"' else "success_exit"
    f.write_text(hostile_cli.BASE.replace("[targets.prog]\n", f"[targets.prog]\n{key} = {value}\n", 1))
    with pytest.raises(LayoutbenchError, match=rf"kernel.toml: \[targets.prog\] {key} = "):
        profile.load(str(f))


def test_a_misspelt_setting_is_refused_with_the_near_name(tmp_path):
    """A setting no target kind reads would otherwise be silently ignored (a mis-typed miss_weight
    left the cost at its default); a key of another kind is refused too, naming the kind."""
    f = tmp_path / "kernel.toml"
    f.write_text(hostile_cli.BASE.replace("[targets.cg]\n", "[targets.cg]\nmis_weight = 5\n", 1))
    with pytest.raises(LayoutbenchError, match=r"\[targets.cg\] has no setting 'mis_weight' for kind cachegrind; "
                                               r"did you mean 'miss_weight'\?"):
        profile.load(str(f))
    f.write_text(hostile_cli.BASE.replace("[targets.prog]\n", '[targets.prog]\ni1 = "4096,2,64"\n', 1))
    with pytest.raises(LayoutbenchError, match=r"has no setting 'i1' for kind local; .*its settings are: args, command"):
        profile.load(str(f))
    f.write_text(hostile_cli.BASE.replace("[targets.cg]\n", "[targets.cg]\nmiss_weight = 5\n", 1))
    assert profile.load(str(f)).targets["cg"].settings["miss_weight"] == 5


# -- every setting of every target kind is typed; budgets stay bounded --------------------------------

def test_every_setting_of_every_target_kind_has_a_type_check_in_the_one_table():
    from layoutbench.target_kinds import COMMON_SETTINGS, SETTINGS

    for kind, keys in SETTINGS.items():
        missing = [k for k in (*COMMON_SETTINGS, *keys) if k not in validate.TARGET_SETTINGS]
        assert not missing, f"kind {kind}: no type check for {missing}"


@pytest.mark.parametrize("kind,key,value", [
    ("qemu-icache", "debug_exit", '"yes"'), ("qemu-icache", "guest_metrics", '"yes"'),
    ("qemu-icache", "rtc", "{ base = 1 }"), ("qemu-icache", "extra_args", '"-smp 2"'),
    ("qemu-icache", "plugin", '"no-such-plugin.so"'), ("qemu-icache", "memory", '"999999T"'),
    ("labgrid-places", "parallel", '"many"'), ("labgrid-places", "parallel", "0"), ("labgrid-places", "parallel", "-3"),
    ("labgrid-places", "acquire_timeout", "nan"), ("labgrid-places", "acquire_timeout", "-5"),
    ("labgrid-places", "acquire_timeout", '"soon"'), ("labgrid-places", "places", "5"),
    ("local", "run_cost", "1e-320"), ("local", "layout_cost", "1e-320"), ("local", "run_cost", "1e308")])
def test_a_bad_setting_of_any_kind_is_refused_at_load_naming_file_table_and_key(tmp_path, kind, key, value):
    f = tmp_path / "kernel.toml"
    extra = 'coordinator = "127.0.0.1:1"\n' if kind == "labgrid-places" else ""
    f.write_text(hostile_cli.BASE.replace("[targets.cg]\n", f'[targets.x]\nkind = "{kind}"\n{extra}{key} = {value}\n\n'
                                          "[targets.cg]\n", 1))
    with pytest.raises(LayoutbenchError, match=rf"kernel.toml: \[targets.x\] {key} = .* (must be|no such file)"):
        profile.load(str(f))


def test_a_plugin_is_found_beside_the_profile(tmp_path):
    (tmp_path / "my.so").write_bytes(b"\x7fELF")
    f = tmp_path / "kernel.toml"
    f.write_text(hostile_cli.BASE.replace("[targets.cg]\n", '[targets.x]\nkind = "qemu-icache"\nplugin = "my.so"\n'
                                          'memory = "1G"\n\n[targets.cg]\n', 1))
    assert profile.load(str(f)).targets["x"].settings["plugin"] == "my.so"


@pytest.mark.parametrize("value", ["[1, true]", '[["a"]]', "[1.5]"])
def test_untracked_inputs_are_strings_not_coerced(tmp_path, value):
    f = tmp_path / "kernel.toml"
    f.write_text(hostile_cli.BASE.replace('ld = "ld.lld-19"\n', f'ld = "ld.lld-19"\nuntracked_inputs = {value}\n', 1))
    with pytest.raises(LayoutbenchError, match=r"\[build\] untracked_inputs = .* must be a list of strings"):
        profile.load(str(f))


def test_a_duration_budget_is_capped_like_a_budget_in_runs():
    from layoutbench import costs

    assert costs.runs_for(3600, 1e-320) == costs.MAX_BUDGET_RUNS  # was an OverflowError
    assert costs.runs_for(3600, 1e-9) == costs.MAX_BUDGET_RUNS  # was 3.6e12 runs
    assert costs.runs_for(3600, 2.0) == 1800 and costs.runs_for(1, 1e308) == 1
    assert costs.runs_for(3600, 0.0) == costs.MAX_BUDGET_RUNS


@pytest.mark.parametrize("value", ["²", "٣", "1²h", "²h"])
def test_a_budget_takes_ascii_digits_only(value):
    from layoutbench import costs

    with pytest.raises(LayoutbenchError, match="--budget"):
        costs.parse_budget(value)


def test_budget_none_is_no_cap():
    from layoutbench import costs

    assert costs.parse_budget("none").unlimited and not costs.parse_budget("5").unlimited


#: setting → (a value the table accepts, values it refuses): every entry of the one table, both ways
SETTING_EXAMPLES = {
    "perf": (["cycles"], [5, ["a b"], [1], "x y"]), "pin": ("0-1", ["abc", True, "3-1"]),
    "success_exit": (255, [256, -1, True, 1.5]), "layout_cost": (1e-6, [1e-7, 0, 366 * 24 * 3600.0 + 1, "1"]),
    "run_cost": (366 * 24 * 3600.0, [1e-320, 1e308, float("nan"), True]),
    "args": (["a", 1, 2.5], ["a", [True], [["a"]]]), "command": (["sh"], [[], "sh", [False]]),
    "collect": (["dmesg"], ["dmesg", [None]]),
    "i1": ("3000,2,64", ["4096,2", 4096, "a,b,c"]), "d1": ("4096,2,64", ["4096"]), "ll": ("1,1,1", ["1,1,1 x"]),
    "miss_weight": (0, [-1, float("inf"), "x", True]), "append": ("", [["x"]]),
    "memory": ("1M", ["1K", "2T", "0", 0, True, "lots", "1.5G"]), "machine": ("q35", [5]), "cpu": ("max", [5]),
    "accel": ("kvm", ["fast", 1]), "initrd": ("x", [[1]]), "debug_exit": (False, ["yes", 1]),
    "qemu": ("qemu-system-x86_64", ["", " ", 5]), "extra_args": (["-smp", "1"], ["-smp 1", [True]]),
    "plugin": ("p.so", ["", 5]), "icount": ("shift=0", [0]), "rtc": ("base=utc", [{"a": 1}]),
    "guest_metrics": (True, ["yes"]), "host": ("h", ["", 5]), "port": (65535, [0, 65536, "22", True]),
    "user": ("u", [1]), "identity": ("k", [1]), "ssh_config": ("c", [1]), "known_hosts": ("k", [1]),
    "connect_timeout": (validate.MAX_TIMEOUT, [0, -1, validate.MAX_TIMEOUT + 1, "5", float("nan")]),
    "remote_dir": ("/tmp/x", [" ", 5]), "install": ("true", [["x"]]), "reboot": (True, ["yes", 1]),
    "reboot_command": ("reboot", [1]), "boot_id_command": ("cat x", [1]), "boot_timeout": (1e-3, [0]),
    "boot_poll": (5, [0, True]), "host_id": ("h", [1]), "env": ("env.yaml", ["", 5]), "role": ("main", [[1]]),
    "image_key": ("kernel", [1]), "state": ("shell", [True]), "off_state": ("off", [1]), "boot_args": ("", [[1]]),
    "coordinator": ("h:1", ["", 5]), "places": ("p*", [5, [], [1]]), "tags": ({"pool": "b", "n": 1},
                                                                             ["bench", {"pool": True}]),
    "acquire_timeout": (3600, ["soon", float("nan"), -5, float("inf")]), "parallel": (1024, ["many", 0, -3, 2.5, 1025]),
}


def test_every_entry_of_the_setting_table_accepts_a_good_value_and_refuses_the_bad_ones(tmp_path):
    from layoutbench.target_kinds import SETTINGS

    assert set(SETTING_EXAMPLES) == set(validate.TARGET_SETTINGS)
    (tmp_path / "p.so").write_bytes(b"")
    kind_of = {key: next(k for k, keys in SETTINGS.items() if key in keys) for key in validate.TARGET_SETTINGS
               if key not in ("perf", "pin", "success_exit", "layout_cost", "run_cost")}
    kind_of.update(i1="cachegrind", accel="qemu")
    for key, (good, bads) in SETTING_EXAMPLES.items():
        kind = kind_of.get(key, "local")
        validate.target_settings(tmp_path / "kernel.toml", "t", kind, {key: good})
        for bad in bads:
            with pytest.raises(LayoutbenchError, match=rf"kernel.toml: \[targets.t\] {key} = .* must be "):
                validate.target_settings(tmp_path / "kernel.toml", "t", kind, {key: bad})


def test_the_stricter_rules_of_one_kind():
    ok = {"i1": "4096,2,64", "accel": "tcg"}
    validate.target_settings("k.toml", "t", "qemu-icache", ok)
    validate.target_settings("k.toml", "t", "qemu-icache", {"i1": "128,2,64"})  # one set is a power of two
    for key, bad in (("i1", "3000,2,64"), ("i1", "4096,2,48"), ("i1", "4096,0,64"), ("i1", "64,2,64"),
                     ("i1", "4096,2,0"), ("accel", "kvm")):
        with pytest.raises(LayoutbenchError, match=rf"\[targets.t\] {key} = .* must be "):
            validate.target_settings("k.toml", "t", "qemu-icache", {**ok, key: bad})


@pytest.mark.parametrize("value,size", [("256M", 256 << 20), ("1g", 1 << 30), ("1T", 1 << 40), (64, 64 << 20),
                                        ("2048", 2048 << 20), ("4096K", 4 << 20), ("1GB", 1 << 30), ("0", None),
                                        (0, None), (-1, None), (True, None), ("1.5G", None), ([1], None)])
def test_memory_sizes_read_as_qemu_does(value, size):
    assert validate.memory_bytes(value) == size


def test_guest_memory_from_one_mib_to_one_tib():
    for good in ("1T", "1M", 1, "1048576K"):
        validate.target_settings("k.toml", "t", "qemu", {"memory": good})
    for bad in ("1025G", "1023K", "512K"):
        with pytest.raises(LayoutbenchError, match="memory = .* must be a size from 1M to 1T"):
            validate.target_settings("k.toml", "t", "qemu", {"memory": bad})


def test_the_command_line_checks_name_the_option():
    for o, opt in (({"timeout": 0}, "--timeout"), ({"seed": -1}, "--seed"), ({"runs": 0}, "--runs"),
                   ({"max_runs": 10_001}, "--max-runs"), ({"layouts_k": 0}, "--layouts"),
                   ({"max_layouts": 0}, "--max-layouts"), ({"jobs": 1025}, "--jobs"), ({"jobs": 0}, "--jobs"),
                   ({"step": 0}, "--step"), ({"confidence": 1.0}, "--confidence"), ({"confidence": 0}, "--confidence"),
                   ({"pin": "x"}, "--pin"), ({"perf_events": "a b"}, "--perf-events")):
        with pytest.raises(LayoutbenchError, match=opt):
            validate.options(o)
    validate.options({"timeout": 1, "seed": 0, "runs": 10_000, "max_runs": 1, "layouts_k": 1, "max_layouts": 10_000,
                      "jobs": 1024, "step": 1, "confidence": 0.9999, "pin": "0", "perf_events": "cycles"})
    assert validate.min_effect_percent(0) == 0 and validate.min_effect_percent(49.9) == 49.9
    for v in (-0.1, 50, 1000.1, float("nan"), "1.5x"):
        with pytest.raises(LayoutbenchError, match=r"--min-effect .* a percent"):
            validate.min_effect_percent(v)
    assert validate.min_effect_fraction(None) is None and validate.min_effect_fraction(0.5) == 0.5
    for v in (0, 0.51, 10):
        with pytest.raises(LayoutbenchError, match=r"min_effect .* \(a relative change"):
            validate.min_effect_fraction(v)


def test_cpu_lists_and_event_names():
    assert validate.pin(None) is None and validate.pin("") is None and validate.pin("1,3") == "1,3"
    assert validate.pin(2) == "2" and validate.pin("0-0") == "0-0"
    for v in ("3-1", "a", "1,,2", True, "-1"):
        with pytest.raises(LayoutbenchError, match="--pin"):
            validate.pin(v)
    import os

    have = os.sched_getaffinity(0)
    assert validate.pin(str(min(have)), local=True) == str(min(have))
    with pytest.raises(LayoutbenchError, match=rf"CPU {max(have) + 1} is not available here \(this machine runs on "):
        validate.pin(f"{min(have)}-{max(have) + 1}", local=True)
    assert validate._cpu_text({0, 1, 2}) == "0-2" and validate._cpu_text({1, 3}) == "1,3"
    assert validate._cpu_text({4}) == "4"
    assert validate.perf_events(None) is None and validate.perf_events(" cycles , instructions") == (
        "cycles", "instructions")
    for v in ("", "a,,b", "x y", ","):
        with pytest.raises(LayoutbenchError, match="--perf-events"):
            validate.perf_events(v)


def test_metrics_asked_for_are_ones_the_runs_printed():
    validate.known_metrics(["t", "all"], ["t", "u"])
    validate.known_metrics(["x"], [])  # nothing printed yet: nothing to check against
    validate.known_metrics(None, ["t"])
    with pytest.raises(LayoutbenchError, match=r"no metric 'x' in these runs; they printed: t, u"):
        validate.known_metrics(["t", "x"], ["t", "u"])
    assert validate.metric_names("a, b,a") == ("a", "b") and validate.metric_names([]) is None
    assert validate.metric_names(None) is None and validate.metric_names(("a", "b,c")) == ("a", "b", "c")


def test_numbers_and_their_bounds():
    assert validate.finite("x", 0, lo=0) == 0 and validate.finite("x", 1, lo=0, lo_open=True, hi=1) == 1
    for v, kw, msg in ((0, dict(lo=0, lo_open=True), "> 0"), (2, dict(hi=1), "<= 1"), (-1, dict(lo=0), ">= 0"),
                       ("1", {}, "finite number$"), (True, {}, "finite number$")):
        with pytest.raises(LayoutbenchError, match=msg):
            validate.finite("x", v, **kw)
    assert validate.integer("n", 5, 5, 5) == 5
    for v, lo, hi, msg in ((4, 5, None, "from 5$"), (6, None, 5, " to 5$"), (True, None, None, "whole number$"),
                           (1.0, 0, 2, "from 0 to 2")):
        with pytest.raises(LayoutbenchError, match=msg):
            validate.integer("n", v, lo, hi)
    assert validate.timeout("t", None) is None and validate.seed("s", None) is None
    assert validate.seed("s", validate.MAX_SEED, 1) == validate.seed("s", validate.MAX_SEED) == validate.MAX_SEED
    with pytest.raises(LayoutbenchError, match="last seed passes"):
        validate.seed("s", validate.MAX_SEED, 2)

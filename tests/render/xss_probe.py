"""A run whose names and metadata try to inject markup and script into the HTML report.

Every string an HLO dump or a run manifest can carry into the page holds a payload that
would set `window.__pwned` if it ever became markup: `<script>`, a closing `</script>` to
break out of the JSON block, an attribute break-out with an event handler (`"><img
onerror=...>`), an SVG `onload`, U+2028 (which ends a JS string in old engines), quotes
and non-ASCII text. The report must show them as text and run none of them.
"""

from __future__ import annotations

import json
from pathlib import Path

SCRIPT = "<script>window.__pwned=1</script>"
BREAKOUT = '"><img src=x onerror="window.__pwned=1">'
CLOSE = "</script><script>window.__pwned=1</script>"
SVG = "<svg onload=window.__pwned=1>"
PAYLOADS = (SCRIPT, BREAKOUT, CLOSE, SVG)


def _q(text: str) -> str:
    """Quote a string the way HLO metadata prints it."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _metadata(op_type: str, op_name: str, source: str, line: int) -> str:
    return (
        f"metadata={{op_type={_q(op_type)} op_name={_q(op_name)} "
        f"source_file={_q(source)} source_line={line}}}"
    )


OP_TYPE = f"Relu{SCRIPT}"
OP_NAME = f"modèle/couche_ü/{BREAKOUT}/relu \u2028 'quoted'"
ADD_NAME = f"modèle/{CLOSE}/add"
SOURCE = f"/tmp/ünïcödé/{SVG}.py"

BEFORE = f"""HloModule xss_probe_é, entry_computation_layout={{(f32[4]{{0}}, f32[4]{{0}})->f32[4]{{0}}}}

ENTRY main.é {{
  x = f32[4]{{0}} parameter(0)
  y = f32[4]{{0}} parameter(1)
  add.1 = f32[4]{{0}} add(x, y), {_metadata("AddV2", ADD_NAME, SOURCE, 7)}
  zero = f32[] constant(0)
  zeros = f32[4]{{0}} broadcast(zero), dimensions={{}}
  ROOT relu.é = f32[4]{{0}} maximum(add.1, zeros), {_metadata(OP_TYPE, OP_NAME, SOURCE, 8)}
}}
"""

AFTER = f"""HloModule xss_probe_é, is_scheduled=true, entry_computation_layout={{(f32[4]{{0}}, f32[4]{{0}})->f32[4]{{0}}}}

fused_computation.é {{
  p0 = f32[4]{{0}} parameter(0)
  p1 = f32[4]{{0}} parameter(1)
  add.1 = f32[4]{{0}} add(p0, p1), {_metadata("AddV2", ADD_NAME, SOURCE, 7)}
  zero = f32[] constant(0)
  zeros = f32[4]{{0}} broadcast(zero), dimensions={{}}
  ROOT relu.é = f32[4]{{0}} maximum(add.1, zeros), {_metadata(OP_TYPE, OP_NAME, SOURCE, 8)}
}}

ENTRY main.é {{
  x = f32[4]{{0}} parameter(0)
  y = f32[4]{{0}} parameter(1)
  ROOT add_maximum_fusion.é = f32[4]{{0}} fusion(x, y), kind=kLoop, calls=fused_computation.é, backend_config={_q(json.dumps({"note": CLOSE}))}
}}
"""

NAME = "xss_probe_é"


def make_xss_run(folder: Path) -> Path:
    """Write the probe run (a run.json manifest and a dump) into `folder`; return it."""
    dump = folder / "dump"
    dump.mkdir(parents=True, exist_ok=True)
    (dump / f"module_0001.{NAME}.before_optimizations.txt").write_text(BEFORE, encoding="utf-8")
    (dump / f"module_0001.{NAME}.cpu_after_optimizations.txt").write_text(AFTER, encoding="utf-8")
    manifest = {
        "target": {"kind": "script", "name": f"/tmp/{SCRIPT}{BREAKOUT}.py", "args": [BREAKOUT]},
        "command": ["hloscope", "dump", SCRIPT, CLOSE],
        "framework": "jax",
        "versions": {"jax": BREAKOUT, "python": f"3.11 {CLOSE}"},
        "platform": "cpu",
        "device": f"{SVG} \u2028 \u2029",
        "wall_time_s": 1.5,
        "exit_code": 0,
        "dump_dir": "dump",
    }
    (folder / "run.json").write_text(json.dumps(manifest), encoding="utf-8")
    return folder

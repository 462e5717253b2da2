"""Load, list and write hardware specs.

``load_spec`` accepts a shipped spec's name (``"h100"``), ``"host"`` (the
machine this runs on: its calibrated spec if ``tilesolve calibrate`` wrote one
for this machine, else detected), a path to a YAML file, or a HardwareSpec
(returned as is).  Shipped specs live in ``tilesolve/specs/data/*.yaml``.
"""
from __future__ import annotations

import functools
import os
from importlib import resources
from pathlib import Path
from typing import Any, List, Optional, Union

import yaml

from ..errors import SpecError
from .spec import HardwareSpec

__all__ = ["load_spec", "list_specs", "spec_to_yaml", "spec_from_yaml", "require_kind",
           "default_cache_dir", "calibrated_host", "HOST"]

HOST = "host"
_SUFFIXES = (".yaml", ".yml")


class _StrictLoader(yaml.SafeLoader):
    """A safe YAML loader that rejects a key given twice in one mapping."""


def _mapping_no_duplicates(loader: yaml.SafeLoader, node: yaml.MappingNode) -> dict:
    seen = set()
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=True)
        if key in seen:
            raise yaml.constructor.ConstructorError(
                None, None, f"field {key!r} appears twice", key_node.start_mark)
        seen.add(key)
    return loader.construct_mapping(node, deep=True)


_StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG,
                              _mapping_no_duplicates)


def _data_dir() -> Any:
    return resources.files(__package__) / "data"


def list_specs(*, include_host: bool = True) -> List[str]:
    """Names of the shipped specs, sorted, then ``"host"`` (unless excluded)."""
    names = sorted(entry.name.rsplit(".", 1)[0] for entry in _data_dir().iterdir()
                   if entry.name.endswith(".yaml"))
    return names + [HOST] if include_host else names


def spec_from_yaml(text: str, source: str = "<string>") -> HardwareSpec:
    """Parse and validate one spec from YAML text; ``source`` names it in errors."""
    try:
        data = yaml.load(text, Loader=_StrictLoader)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(exc, "problem", None) or str(exc)
        raise SpecError(f"{source}: malformed YAML{where}: {problem}; expected a mapping "
                        f"of spec fields (see SCHEMA.md)") from None
    return HardwareSpec.from_dict(data, source=source)


@functools.lru_cache(maxsize=None)
def _load_shipped(name: str) -> HardwareSpec:
    filename = f"{name}.yaml"
    return spec_from_yaml((_data_dir() / filename).read_text(encoding="utf-8"), filename)


def _load_file(path: Path) -> HardwareSpec:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise SpecError(f"{path}: no such spec file; expected a YAML file or one of the "
                        f"spec names {', '.join(list_specs())}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise SpecError(f"{path}: cannot read the spec file: {exc}") from None
    return spec_from_yaml(text, str(path))


def default_cache_dir(environ: Optional[dict] = None) -> Path:
    """Where measured host facts are cached: ``$TILESOLVE_CACHE_DIR`` if set,
    else ``~/.cache/tilesolve``."""
    env = os.environ if environ is None else environ
    configured = env.get("TILESOLVE_CACHE_DIR")
    return Path(configured).expanduser() if configured else Path.home() / ".cache" / "tilesolve"


def calibrated_host(cache_dir: Union[str, "os.PathLike[str]"]) -> Optional[HardwareSpec]:
    """The spec ``tilesolve calibrate`` wrote for this machine in ``cache_dir``, or
    None (no file, or one whose ``# machine:`` line names another machine).

    A file for this machine that does not load raises :class:`SpecError` naming
    it: run ``tilesolve calibrate`` again, or delete the file."""
    from .host import CALIBRATED_FILE, FINGERPRINT_PREFIX, host_fingerprint

    path = Path(cache_dir) / CALIBRATED_FILE
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        raise SpecError(f"{path}: cannot read the calibrated host spec: {exc}") from None
    machine = next((line[len(FINGERPRINT_PREFIX):].strip() for line in text.splitlines()
                    if line.startswith(FINGERPRINT_PREFIX)), None)
    if machine != host_fingerprint():
        return None
    try:
        return spec_from_yaml(text, str(path))
    except SpecError as exc:
        raise SpecError(f"{exc} (a calibrated host spec: run `tilesolve calibrate` again, "
                        "or delete the file to use the detected host)") from None


def load_spec(name_or_path: Union[str, "os.PathLike[str]", HardwareSpec], *,
              measure_bandwidth: bool = True,
              cache_dir: Optional[Union[str, "os.PathLike[str]"]] = None,
              calibrated: bool = True) -> HardwareSpec:
    """Return the HardwareSpec for a name, a YAML path, ``"host"`` or a spec.

    * a :class:`HardwareSpec` is returned as is;
    * ``"host"``: the spec ``tilesolve calibrate`` wrote for this machine under
      ``cache_dir`` (``host.yaml``), if there is one and ``calibrated`` and
      ``measure_bandwidth`` are true; else this machine, detected: its memory
      bandwidth is measured once (unless ``measure_bandwidth=False``) and cached
      under ``cache_dir`` (default: ``$TILESOLVE_CACHE_DIR``, see
      :func:`default_cache_dir`);
    * a shipped name (see :func:`list_specs`, case-insensitive) loads
      ``data/<name>.yaml``;
    * anything else is read as a path to a YAML file.

    Raises :class:`SpecError` for an unknown name, a missing or malformed
    file, or an invalid spec.
    """
    if isinstance(name_or_path, HardwareSpec):
        return name_or_path
    if not isinstance(name_or_path, (str, os.PathLike)):
        raise SpecError(f"load_spec: expected a spec name, a path or a HardwareSpec, got "
                        f"{type(name_or_path).__name__} {name_or_path!r}")
    text = os.fspath(name_or_path)
    looks_like_path = (isinstance(name_or_path, os.PathLike) or os.sep in text
                       or "/" in text or text.endswith(_SUFFIXES))
    if not looks_like_path:
        key = text.strip().lower()
        if key == HOST:
            from .host import detect_host

            directory = Path(cache_dir) if cache_dir is not None else default_cache_dir()
            if calibrated and measure_bandwidth:
                spec = calibrated_host(directory)
                if spec is not None:
                    return spec
            return detect_host(measure_bandwidth=measure_bandwidth, cache_dir=directory)
        if key in list_specs(include_host=False):
            return _load_shipped(key)
        if not Path(text).is_file():
            raise SpecError(f"{text!r}: unknown spec name; expected one of "
                            f"{', '.join(list_specs())}, or a path to a YAML file")
    return _load_file(Path(text))


def require_kind(spec: HardwareSpec, kind: str, *, what: str = "this target") -> HardwareSpec:
    """Return ``spec`` if it is of ``kind`` ("cpu" or "gpu"), else raise SpecError.

    ``what`` names the consumer in the message, e.g. ``"the CPU backend"``.
    """
    if kind not in ("cpu", "gpu"):
        raise ValueError(f"kind must be 'cpu' or 'gpu', got {kind!r}")
    if spec.kind != kind:
        where = spec.source or spec.name
        raise SpecError(f"{where}: field 'kind': {what} expected a {kind} spec, got "
                        f"{spec.kind!r} (spec {spec.name!r}); pick a {kind} spec, e.g. "
                        f"{'host' if kind == 'cpu' else 'h100'}")
    return spec


def spec_to_yaml(spec: HardwareSpec) -> str:
    """The spec as YAML text that ``load_spec`` reads back to an equal spec.

    Fields come in schema order; each cache level is written on one line.
    """
    lines = [f"# tilesolve hardware spec '{spec.name}' ({spec.kind}); fields: see SCHEMA.md",
             "# Generated by `tilesolve specs`; edit it and load it with "
             "load_spec('path/to/file.yaml')."]
    for key, value in spec.to_dict().items():
        if key == "caches":
            lines.append("caches:")
            for level in value:
                flow = yaml.safe_dump(level, default_flow_style=True, sort_keys=False,
                                      width=1000).strip()
                lines.append(f"  - {flow}")
        else:
            dumped = yaml.safe_dump({key: value}, sort_keys=False, allow_unicode=True,
                                    width=1000).strip()
            lines.append(dumped)
    return "\n".join(lines) + "\n"

"""tilesolve: a Halide-style compiler for image and array pipelines whose
automatic scheduler solves for the schedule (CP-SAT / ILP, greedy, beam).

    import tilesolve as ts
    x, y = ts.Var("x"), ts.Var("y")
    f = ts.Func("f"); f[x, y] = x + y
    out = ts.reference.realize(ts.Pipeline(f), [4, 3])

See DESIGN.md for the conventions (dimension order, numpy axis order, types).
"""
from .errors import (BoundsError, ChunkingError, ChunkingWarning, LoweringError,  # noqa: F401
                     PipelineError, RealizeError, ScheduleError, SolverError, SpecError,
                     SpecWarning,
                     TilesolveError)
from .model import boundary  # noqa: F401
from .reference import Buffer  # noqa: F401
from .model.derived import (absd, fast_cos, fast_exp, fast_inverse,  # noqa: F401
                            fast_inverse_sqrt, fast_log, fast_pow, fast_sin, halving_add,
                            halving_sub, i8_sat, i16_sat, i32_sat, is_finite, is_inf, is_nan,
                            lerp, likely, likely_if_innermost, mul_shift_right, mux,
                            rounding_halving_add, rounding_mul_shift_right,
                            rounding_shift_left, rounding_shift_right, saturating_add,
                            saturating_sub, u8_sat, u16_sat, u32_sat, widening_add,
                            widening_mul, widening_sub)
from .model.derived import max_n as max  # noqa: F401,A001
from .model.derived import min_n as min  # noqa: F401,A001
from .model.derived import select_n as select  # noqa: F401
from .model.expr import (Expr, Param, RVar, Var, acos, acosh, asin, asinh, atan,  # noqa: F401
                         atan2, atanh, cast, ceil, clamp, cos, cosh, exp, floor, log,
                         reinterpret, saturating_cast, sin, sinh, sqrt, tan, tanh, trunc)
from .model.expr import abs_ as abs  # noqa: F401,A001
from .model.expr import pow_ as pow  # noqa: F401,A001
from .model.expr import round_ as round  # noqa: F401,A001
from .model.func import Func  # noqa: F401
from .model.params import ImageParam  # noqa: F401
from .model.pipeline import Pipeline  # noqa: F401
from .model.rdom import RDom  # noqa: F401
from .model.schedule import Schedule  # noqa: F401
from .model.reductions import argmax, argmin, maximum, minimum, product  # noqa: F401
from .model.tuples import undef  # noqa: F401
from .model.reductions import sum  # noqa: F401,A001
from .model.types import (Type, bool_, float16, float32, float64, int8, int16, int32,  # noqa: F401
                          int64, uint8, uint16, uint32, uint64)

__version__ = "0.1.0"


def _func_realize(self, sizes, **inputs_and_params):
    """Solve (once) and compile (once) the pipeline of this Func alone, then run it:
    ``f.realize([W, H], input=img)``; ``spec=`` (default "host") and ``method=`` (default
    "auto") choose the solve (``tilesolve.driver.realize_func``)."""
    from .driver import realize_func
    return realize_func(self, sizes, **inputs_and_params)


Func.realize = _func_realize


def _schedule_loop_nest(self, sizes, *, input_sizes=None, params=None) -> str:
    """The loop nest with concrete bounds for output sizes ``sizes`` (like Halide's
    ``print_loop_nest``), read from the lowered program (``tilesolve.lower.loopnest``)."""
    from .lower.loopnest import loop_nest
    return loop_nest(self, sizes, input_sizes=input_sizes, params=params)


Schedule.loop_nest = _schedule_loop_nest


def _schedule_to_html(self, *, estimates=None, profile=None, title=None) -> str:
    """A self-contained HTML page picturing the schedule: the pipeline DAG with the
    solver's groups as clusters, each group's tile over its output, the predicted cost
    split per group, and with ``profile=`` (``compiled.profile()``) the measured time
    per Func beside it (``tilesolve.viz``; docs/explain.md)."""
    from .viz import schedule_html
    return schedule_html(self, estimates=estimates, profile=profile, title=title)


Schedule.to_html = _schedule_to_html


def __getattr__(name):
    # Later phases are imported lazily so that importing tilesolve stays cheap
    # and a phase can be used before the ones to its right exist.
    import importlib
    lazy = {
        "reference": ("tilesolve.reference", None),
        "compile": ("tilesolve.driver", "compile"),
        "load_spec": ("tilesolve.specs", "load_spec"),
        "HardwareSpec": ("tilesolve.specs", "HardwareSpec"),
        "solve_schedule": ("tilesolve.driver", "solve_schedule"),
        "autotune": ("tilesolve.tune.autotune", "autotune"),
        "tune": ("tilesolve.tune", None),
        "Interval": ("tilesolve.analysis.intervals", "Interval"),
        "Box": ("tilesolve.analysis.intervals", "Box"),
        "bounds_of": ("tilesolve.analysis.intervals", "bounds_of"),
        "required_regions": ("tilesolve.analysis.intervals", "required_regions"),
        "apps": ("tilesolve.apps", None),
        "distributed": ("tilesolve.distributed", None),
        "release_memory": ("tilesolve.memory", "release_memory"),
    }
    if name in lazy:
        mod, attr = lazy[name]
        m = importlib.import_module(mod)
        return m if attr is None else getattr(m, attr)
    raise AttributeError(f"module 'tilesolve' has no attribute {name!r}")

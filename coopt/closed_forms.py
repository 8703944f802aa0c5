"""Closed-form bounds: named SymPy derivations with a numeric evaluator.

A topic module in this package defines ``BOUNDS``, a list of :class:`Bound`. Each bound is one
equation ``output = expr(inputs)`` with its symbols (unit, physical range, default value), the
assumptions it rests on and the source it comes from. From that one statement we get the LaTeX
form, the equation solved for any input (SymPy), and a numpy-vectorized evaluator (lambdify).

Where SymPy cannot do the derivation itself (an infinite sum it leaves unevaluated, say), the
module states the identity in the bound's ``notes`` and its tests check it independently.

Some quantities are not one equation but a procedure: an enumeration (the best draft length), a
table lookup (a network's measured noise tolerance), a root or a fit. A topic module states those
as :class:`Curve` entries: the same symbols, ranges and defaults, a ``method`` line saying how the
number is computed, and a Python function in place of the expression. The registry and the
``coopt bound`` command treat both alike; a curve cannot be printed as LaTeX or solved for an input.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cache, cached_property, lru_cache
from typing import Any

import numpy as np
import sympy as sp

from coopt.errors import UsageError

#: Physical ranges a symbol may declare, with their checks and how to say them.
DOMAINS: dict[str, tuple[Callable[[float], bool], str]] = {
    "real": (lambda v: math.isfinite(v), "a finite number"),
    "positive": (lambda v: v > 0 and math.isfinite(v), "a number > 0"),
    "nonnegative": (lambda v: v >= 0 and math.isfinite(v), "a number >= 0"),
    "unit": (lambda v: 0 <= v <= 1, "a number in [0, 1]"),
    "open_unit": (lambda v: 0 < v < 1, "a number in (0, 1)"),
    "efficiency": (lambda v: 0 < v <= 1, "a number in (0, 1]"),
    "probability_below_one": (lambda v: 0 <= v < 1, "a number in [0, 1)"),
    "positive_integer": (lambda v: v >= 1 and float(v).is_integer(), "an integer >= 1"),
    "nonnegative_integer": (lambda v: v >= 0 and float(v).is_integer(), "an integer >= 0"),
}

_ASSUMPTIONS = {
    "real": {"real": True},
    "positive": {"positive": True},
    "nonnegative": {"nonnegative": True},
    "unit": {"nonnegative": True},
    "open_unit": {"positive": True},
    "efficiency": {"positive": True},
    "probability_below_one": {"nonnegative": True},
    "positive_integer": {"positive": True, "integer": True},
    "nonnegative_integer": {"nonnegative": True, "integer": True},
}


@dataclass(frozen=True)
class Quantity:
    """A named symbol with its unit, physical domain and (optional) default value."""

    name: str
    description: str
    unit: str = "1"
    domain: str = "positive"
    default: float | None = None
    latex: str | None = None

    def __post_init__(self) -> None:
        if self.domain not in DOMAINS:
            raise ValueError(f"unknown domain {self.domain!r} for {self.name}")

    @cached_property
    def symbol(self) -> sp.Symbol:
        return sp.Symbol(self.name, **_ASSUMPTIONS[self.domain])

    def validate(self, value: Any, where: str) -> None:
        ok, expected = DOMAINS[self.domain]
        values = np.asarray(value, dtype=float).ravel()
        bad = [v for v in values if not ok(float(v))]
        if bad:
            raise UsageError(f"{where}: {self.name} ({self.description}) must be {expected}, got {bad[0]:g}")


class _Symbols:
    """Symbol lookup shared by :class:`Bound` and :class:`Curve`."""

    name: str
    output: Quantity
    inputs: tuple[Quantity, ...]
    relations: tuple[sp.Rel, ...]

    @property
    def symbols(self) -> dict[str, Quantity]:
        return {q.name: q for q in (self.output, *self.inputs)}

    def quantity(self, name: str) -> Quantity:
        try:
            return self.symbols[name]
        except KeyError:
            raise UsageError(
                f"bound {self.name!r} has no symbol {name!r}; it has {', '.join(self.symbols)}"
            ) from None

    def _arguments(
        self, values: Mapping[str, Any], args: list[Quantity], unknown: str | None = None
    ) -> list[np.ndarray]:
        """Check every given name exists, fill defaults, check ranges and the relations (except
        those on the ``unknown`` being solved for); arrays for ``args``."""
        for key in values:
            self.quantity(key)
        arguments = [self._value(values, q) for q in args]
        for relation in self.relations:
            involved = sorted(relation.free_symbols, key=str)
            if unknown in {str(s) for s in involved}:
                continue
            holds = _lambdify(relation, tuple(involved))(
                *(self._value(values, self.quantity(str(s))) for s in involved)
            )
            if not np.all(holds):
                raise UsageError(f"bound {self.name!r} needs {relation}")
        return arguments

    def _value(self, values: Mapping[str, Any], q: Quantity) -> np.ndarray:
        value = values.get(q.name, q.default)
        if value is None:
            raise UsageError(f"bound {self.name!r}: give a value for {q.name} ({q.description})")
        q.validate(value, f"bound {self.name!r}")
        return np.asarray(value, dtype=float)


@dataclass(frozen=True)
class Bound(_Symbols):
    """``output = expr(inputs)``: one closed form with everything needed to trust and use it."""

    name: str
    summary: str
    source: str
    output: Quantity
    inputs: tuple[Quantity, ...]
    expr: sp.Expr
    assumptions: tuple[str, ...] = ()
    notes: str = ""
    #: Solved forms SymPy cannot find on its own (symbol name -> expression for that symbol).
    solved: Mapping[str, sp.Expr] = field(default_factory=dict)
    #: Physical constants kept as symbols in the printed form (symbol -> SI value).
    constants: Mapping[sp.Symbol, float] = field(default_factory=dict)
    #: Relations between inputs that ranges alone cannot state (e.g. ``K <= E``).
    relations: tuple[sp.Rel, ...] = ()
    #: Fits the bound's coefficients to measured rows: ``fit(columns) -> (symbol -> value, error)``,
    #: where ``columns`` maps the other symbols (output included) to equal-length arrays.
    fit: Callable[[Mapping[str, np.ndarray]], tuple[dict[str, float], float]] | None = None
    #: The same function rearranged for floating point (e.g. a series where ``expr`` cancels);
    #: evaluated in place of ``expr``, never printed or solved.
    stable: sp.Expr | None = None

    def equation(self) -> sp.Eq:
        return sp.Eq(self.output.symbol, self.expr)

    def latex(self) -> str:
        names = {q.symbol: q.latex for q in self.symbols.values() if q.latex}
        return sp.latex(self.equation(), symbol_names=names)

    def solve_for(self, name: str) -> sp.Expr:
        """The bound rearranged to give ``name`` in terms of the others (and the output)."""
        if name == self.output.name:
            return self.expr
        target = self.quantity(name).symbol
        if name in self.solved:
            return self.solved[name]
        if self.expr.has(*_NOT_INVERTIBLE):
            raise NoClosedForm(f"bound {self.name!r} is piecewise or discrete: no closed form for {name}")
        if _transcendental_in(self.expr, target):
            raise NoClosedForm(f"bound {self.name!r} is transcendental in {name}: no closed form")
        try:
            roots = _real_roots(self.equation(), target)
        except (NotImplementedError, RecursionError):
            roots = []
        if not roots:
            raise NoClosedForm(f"bound {self.name!r}: SymPy finds no closed form for {name}")
        return roots[-1] if len(roots) > 1 else roots[0]

    def evaluator(self, name: str | None = None) -> tuple[Callable[..., Any], list[Quantity]]:
        """A numpy function for the output (or the solved form for ``name``) and its arguments."""
        if name is None or name == self.output.name:
            expr = self.expr if self.stable is None else self.stable
        else:
            expr = self.solve_for(name)
        expr = expr.subs(dict(self.constants))
        args = sorted(
            (self.symbols[str(s)] for s in expr.free_symbols), key=lambda q: list(self.symbols).index(q.name)
        )
        return _lambdify(expr, tuple(q.symbol for q in args)), args

    def evaluate(self, values: Mapping[str, Any], solve_for: str | None = None) -> Any:
        """Evaluate the bound (or the solved form) at ``values``; defaults fill the rest.

        Solving for an input without a closed form falls back to a numeric root (see
        :meth:`solve_numerically`).
        """
        try:
            fn, args = self.evaluator(solve_for)
        except NoClosedForm:
            return self.solve_numerically(solve_for, values)
        arguments = self._arguments(values, args, unknown=solve_for)
        try:
            result = fn(*arguments)
        except NameError:  # a special function numpy lacks (LambertW without scipy)
            if solve_for is None:
                raise
            return self.solve_numerically(solve_for, values)
        if solve_for is None or solve_for == self.output.name or solve_for in self.solved:
            return result
        return self._admissible_root(solve_for, values, result)

    def _admissible_root(self, name: str, values: Mapping[str, Any], first: Any) -> Any:
        """Of several SymPy roots, the first that is in ``name``'s range and keeps the relations."""
        roots = _real_roots(self.equation(), self.quantity(name).symbol)
        if len(roots) < 2:
            return first
        def given(symbol: str) -> np.ndarray:
            return self._value(values, self.quantity(symbol))

        chosen = None
        for root in reversed(roots):  # solve_for's choice (the last root) first
            expr = root.subs(dict(self.constants))
            args = sorted((self.symbols[str(x)] for x in expr.free_symbols), key=lambda q: q.name)
            with np.errstate(all="ignore"):
                value = np.asarray(_lambdify(expr, tuple(q.symbol for q in args))(
                    *self._arguments(values, args, unknown=name)), dtype=complex)
            real = np.where(np.abs(value.imag) <= 1e-12 * np.abs(value.real), value.real, np.nan)
            valid = self._admissible(name, real, given)
            chosen = np.where(valid, real, np.nan) if chosen is None else np.where(
                np.isnan(chosen) & valid, real, chosen)
        if np.all(np.isnan(chosen)):
            raise UsageError(f"bound {self.name!r}: no root for {name} is in its range and relations")
        return chosen[()] if chosen.ndim == 0 else chosen

    def _admissible(self, name: str, candidate: np.ndarray, lookup: Callable[[str], Any]) -> np.ndarray:
        """Where ``candidate`` values of ``name`` are in its range (integers may be fractional: a
        solved count is continuous) and satisfy every relation that involves ``name``."""
        domain = self.quantity(name).domain
        ok = _RELAXED.get(domain, DOMAINS[domain][0])
        valid = np.vectorize(lambda v: bool(np.isfinite(v) and ok(float(v))), otypes=[bool])(candidate)
        for relation in self.relations:
            involved = sorted(relation.free_symbols, key=str)
            if name in {str(x) for x in involved}:
                holds = _lambdify(relation, tuple(involved))(
                    *(candidate if str(x) == name else lookup(str(x)) for x in involved))
                valid = valid & np.asarray(holds, dtype=bool)
        return valid

    def solve_numerically(self, name: str, values: Mapping[str, Any]) -> Any:
        """The value of input ``name`` at which the bound's output equals the given output value.

        A geometric bracket search from the symbol's default (factor 2 per step, down to 1e-60
        of it and up to 1e60) followed by bisection to 1e-13 relative width. It returns the root
        nearest the default (in brackets) that is in range and keeps the relations; that is the
        root when the bound is monotone in ``name``.
        """
        quantity = self.quantity(name)
        if quantity.domain == "real":
            raise UsageError(f"bound {self.name!r}: numeric solving needs a sign-definite {name}")
        fn, args = self.evaluator()
        given = {k: v for k, v in values.items() if k != name}
        others = [q for q in args if q.name != name]
        columns = dict(zip([q.name for q in others], self._arguments(given, others, name), strict=True))
        goal = self._arguments(given, [self.output], name)[0]
        start = quantity.default if quantity.default else 1.0
        ceiling = _CEILINGS.get(quantity.domain, math.inf)

        def lookup(point: dict[str, float]) -> Callable[[str], Any]:
            return lambda s: point[s] if s in point else self._value(values, self.quantity(s))

        def root(target: float, *other: float) -> float:
            point = dict(zip(columns, other, strict=True))

            def gap(x: float) -> float:
                # numpy scalars, so a pole gives nan (skipped by the bracket test), not an exception
                return float(fn(*(np.float64(x if q.name == name else point[q.name]) for q in args))) - target

            low = high = start
            with np.errstate(all="ignore"):
                for _ in range(200):
                    low, high = low / 2, high * 2
                    for a, b in ((low, low * 2), (high / 2, min(high, ceiling))):
                        if a < b and np.sign(gap(a)) * np.sign(gap(b)) <= 0:
                            for _ in range(200):
                                mid = math.sqrt(a * b)
                                if np.sign(gap(a)) * np.sign(gap(mid)) <= 0:
                                    b = mid
                                else:
                                    a = mid
                                if b - a <= 1e-13 * b:
                                    break
                            found = math.sqrt(a * b)
                            if self._admissible(name, np.float64(found), lookup(point)):
                                return found
            raise UsageError(f"bound {self.name!r}: no {name} in its range (searched 1e-60..1e60 x its "
                             f"default) gives {self.output.name} = {target:g}")

        result = np.vectorize(root, otypes=[float])(goal, *columns.values())
        return result[()] if result.ndim == 0 else result


@dataclass(frozen=True)
class Curve(_Symbols):
    """``output = compute(inputs)`` where ``compute`` is a procedure, not one equation.

    ``compute`` takes every input by keyword (scalars) and returns a float; :meth:`evaluate`
    broadcasts it over arrays like a bound's evaluator. ``method`` says in one line how the
    number is found (enumeration, table interpolation, root, fit).
    """

    name: str
    summary: str
    source: str
    output: Quantity
    inputs: tuple[Quantity, ...]
    compute: Callable[..., float]
    method: str
    assumptions: tuple[str, ...] = ()
    notes: str = ""
    relations: tuple[sp.Rel, ...] = ()

    def latex(self) -> str:
        raise UsageError(f"{self.name!r} is computed by {self.method}; it has no closed form to print")

    def solve_for(self, name: str) -> sp.Expr:
        self.quantity(name)
        raise UsageError(f"{self.name!r} is computed by {self.method}; it cannot be solved for {name}")

    def evaluate(self, values: Mapping[str, Any], solve_for: str | None = None) -> Any:
        if solve_for is not None and solve_for != self.output.name:
            self.solve_for(solve_for)
        arguments = self._arguments(values, list(self.inputs))
        names = [q.name for q in self.inputs]
        result = np.vectorize(
            lambda *v: float(self.compute(**dict(zip(names, v, strict=True)))), otypes=[float]
        )(*arguments)
        return result[()] if result.ndim == 0 else result


#: Anything ``coopt bound`` can show: a closed form or a computed curve.
Entry = Bound | Curve


class NoClosedForm(UsageError):
    """SymPy cannot rearrange the bound for the requested symbol."""


#: Functions whose presence rules out a symbolic inverse (and makes ``sympy.solve`` slow).
_NOT_INVERTIBLE = (sp.Max, sp.Min, sp.floor, sp.ceiling, sp.Sum, sp.Piecewise)


#: Range checks for solved values of integer symbols (the solution of an equation is continuous).
_RELAXED: dict[str, Callable[[float], bool]] = {
    "positive_integer": lambda v: v >= 1 - 1e-9,
    "nonnegative_integer": lambda v: v >= -1e-9,
}

#: Largest value numeric solving tries in domains bounded above by 1.
_CEILINGS = {"unit": 1.0, "efficiency": 1.0, "open_unit": 1 - 1e-12, "probability_below_one": 1 - 1e-12}

_TRANSCENDENTAL = (sp.exp, sp.sinh, sp.cosh, sp.tanh, sp.coth, sp.sin, sp.cos, sp.tan)


def _transcendental_in(expr: sp.Expr, target: sp.Symbol) -> bool:
    """Whether ``target`` sits inside a hyperbolic/trigonometric/exponential function or under a
    symbolic power; ``sympy.solve`` then either fails slowly or returns special functions."""
    for node in sp.preorder_traversal(expr):
        if isinstance(node, _TRANSCENDENTAL) and node.has(target):
            return True
        if isinstance(node, sp.Pow) and node.has(target) and node.exp.free_symbols:
            return True
    return False


@lru_cache(maxsize=1024)
def _real_roots(equation: sp.Eq, target: sp.Symbol) -> list[sp.Expr]:
    return [r for r in sp.solve(equation, target, dict=False) if r.is_real is not False]


@lru_cache(maxsize=1024)
def _lambdify(expr: sp.Expr, args: tuple[sp.Symbol, ...]) -> Callable[..., Any]:
    if expr.has(sp.Sum):
        # Finite sums with symbolic limits become Python loops over range(): scalar math only.
        return np.vectorize(sp.lambdify(args, expr, modules=["math"]), otypes=[float])
    fn = sp.lambdify(args, expr, modules=["numpy", "scipy"] if _has_scipy() else ["numpy"])
    if not expr.has(sp.Piecewise):
        return fn

    def quiet(*values: Any) -> Any:
        # numpy evaluates every branch before selecting; the unselected ones may warn.
        with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
            return fn(*values)

    return quiet


@cache
def _has_scipy() -> bool:
    try:
        import scipy  # noqa: F401
    except ImportError:
        return False
    return True

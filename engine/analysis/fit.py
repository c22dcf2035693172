"""OLS fit of a formula on measurements: least squares on the formula's model matrix, R's summaries.

The model matrix comes from :mod:`engine.model.formula` (one formula engine, R term order); the least
squares are the one QR the fit already holds (:class:`LeastSquares`), so coefficient names, aliasing and
AIC/BIC follow R (``lm``). statsmodels' OLS is not used: it factorised X again and its import alone cost
more CPU than R's whole ``lm`` + ``Anova`` report (issue 31). The transform of the response is chosen at fit time — including the
automatic rule "Box–Cox when ncvTest's p < 0.05" — so a fitted model always knows how it was made.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import pandas as pd

from engine.analysis.blas import single_blas_thread
from engine.analysis.data import AnalysisError, complete_rows
from engine.analysis.labels import Term, column_names, model_terms, stars
from engine.analysis.lsq import QR, qr
from engine.analysis.options import NCV_ALPHA, TRANSFORMS
from engine.analysis.tails import f_p_value, t_p_value
from engine.analysis.transform import (
    BoxCoxProfile,
    PowerTransformResult,
    Transform,
    TransformError,
    power_transform,
    require_positive,
)
from engine.analysis.variance import ncv_test
from engine.model.formula import parse


def solve_upper(R: np.ndarray, B: np.ndarray) -> np.ndarray:
    """R⁻¹B for a nonsingular upper-triangular R (scipy.linalg's import cost is avoided, issue 31): LAPACK's
    LU solve, and with zeros below the diagonal the LU of R is R itself (no row exchange, zero multipliers),
    so this is back substitution."""
    solved: np.ndarray = np.linalg.solve(R, B)
    return solved


@dataclass(frozen=True)
class LeastSquares:
    """The least-squares fit of a response on the kept columns of a QR (statsmodels' names for what a
    fit's readers use): coefficients, fitted values, residuals, their sum of squares and the Gaussian
    log-likelihood as R's ``logLik.lm`` (σ̂² = RSS/n)."""

    params: np.ndarray
    fittedvalues: np.ndarray
    resid: np.ndarray
    ssr: float
    llf: float

    @classmethod
    def of(cls, decomposition: QR, y: np.ndarray) -> LeastSquares:
        effects = decomposition.effects(y)
        params = solve_upper(decomposition.R, effects)
        fitted = decomposition.Q @ effects
        resid = y - fitted
        ssr = float(resid @ resid)
        n = len(y)
        llf = -0.5 * n * (math.log(2.0 * math.pi) + math.log(ssr / n) + 1.0) if ssr > 0 else math.inf
        return cls(params, fitted, resid, ssr, llf)


class LinearModel:
    """``lm(formula)`` with a response transform; scikit-learn style (``fit`` returns self).

    ``transform``: ``none``; ``log``; ``boxcox`` (car's λ̂); ``boxcox-round`` (car's ``roundlam``);
    ``auto`` / ``auto-round`` (Box–Cox only when the untransformed fit's ncvTest p < ``ncv_alpha``;
    kept untransformed if Box–Cox fails); or a number, the λ of ``bcPower``.
    """

    def __init__(self, formula: str, transform: str | float = "none", ncv_alpha: float = NCV_ALPHA):
        self.formula = formula
        self.transform = transform
        self.ncv_alpha = ncv_alpha

    @single_blas_thread
    def fit(self, data: pd.DataFrame) -> LinearModel:
        _check_transform(self.transform)
        parsed = parse(self.formula, data.columns)
        rows = complete_rows(parsed, data)  # refuses a formula without a response
        assert parsed.response is not None and rows.matrix.y is not None
        self.formula_ = parsed
        self.response_: str = parsed.response
        self.data_ = rows.data
        self.n_excluded_ = rows.n_excluded
        self.matrix_ = rows.matrix
        self.terms_: tuple[Term, ...] = model_terms(rows.matrix)
        self.qr_ = qr(rows.matrix.X)
        self.kept_ = self.qr_.kept
        self.X_ = rows.matrix.X[:, self.kept_]
        names = column_names(rows.matrix.columns, rows.matrix.term_slices)
        self.column_names_ = tuple(names[i] for i in self.kept_)
        kept = set(self.kept_.tolist())
        self.aliased_ = tuple(n for i, n in enumerate(names) if i not in kept)
        self.y_raw_: np.ndarray = rows.matrix.y
        if self.n_ <= self.qr_.rank:
            raise AnalysisError(f"formula {self.formula!r}: no residual degrees of freedom ({self.n_} rows, rank {self.qr_.rank})")
        self.ncv_untransformed_ = ncv_test(self.qr_.resid(self.y_raw_), self.qr_.fitted(self.y_raw_))
        self.boxcox_refusal_: str | None = None
        self.power_, self.transform_ = self._resolve_transform()
        self.y_ = self.transform_.apply(self.y_raw_)
        self.results_ = LeastSquares.of(self.qr_, self.y_)
        self.std_errors_, self.t_values_, self.p_values_ = self._coefficient_tests()
        self.warnings_ = self._warnings()
        return self

    def _warnings(self) -> tuple[str, ...]:
        """One line per thing a reader of this fit must know that its tables do not say by themselves."""
        lines = []
        for column in sorted(self.variables_):
            values = self.data_[column].dropna().unique()
            if len(values) == 1:
                value = f"{values[0]:g}" if isinstance(values[0], (float, np.floating)) else values[0]
                lines.append(f"column '{column}' is constant ({value} in every row): its terms cannot be "
                             "estimated apart from the intercept")
        if self.aliased_:
            lines.append(f"aliased (not estimable): {', '.join(self.aliased_)}: each is a combination of the "
                         "columns before it; Type II gives such terms 0 df, Type III is refused")
        if not self.formula_.has_intercept:
            ones = np.ones(self.n_)
            if np.linalg.norm(self.qr_.resid(ones)) < 1e-7 * np.sqrt(self.n_):
                lines.append("no intercept in the formula, yet its columns span a constant: R² and the F test "
                             "are about zero, not the mean, as R computes them; add the intercept for the usual R²")
        if self.boxcox_refusal_:
            lines.append(self.boxcox_refusal_)
        return tuple(lines)

    def _coefficient_tests(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Standard errors, t and p of the coefficients from the QR factor, as R's ``summary.lm``:
        se_j = σ·‖row j of R⁻¹‖. statsmodels inverts R'R, which loses cond(X)² in accuracy; p comes from
        :mod:`engine.analysis.tails`, right where scipy's ``t.sf`` underflows."""
        R_inverse = solve_upper(self.qr_.R, np.eye(self.qr_.rank))
        sigma2 = float(self.results_.ssr) / self.df_resid_
        se = np.sqrt(sigma2 * np.einsum("ij,ij->i", R_inverse, R_inverse))
        with np.errstate(divide="ignore", invalid="ignore"):
            t = np.asarray(self.results_.params, dtype=float) / se
        p = np.array([t_p_value(float(v), self.df_resid_) for v in t])
        return se, t, p

    @property
    def variables_(self) -> tuple[str, ...]:
        """The data columns the right-hand side uses (the factors a decision can fix)."""
        return tuple(sorted(set().union(*(t.variables for t in self.terms_))))

    @property
    def n_(self) -> int:
        return len(self.y_raw_)

    @property
    def fitted_(self) -> np.ndarray:
        return np.asarray(self.results_.fittedvalues)

    @property
    def resid_(self) -> np.ndarray:
        return np.asarray(self.results_.resid)

    @property
    def df_resid_(self) -> int:
        return self.n_ - self.qr_.rank

    def term_positions(self, term: Term) -> list[int]:
        """Positions, among the non-aliased columns, of a term's columns."""
        return [i for i, c in enumerate(self.kept_) if term.columns.start <= c < term.columns.stop]

    def boxcox_profile(self) -> BoxCoxProfile:
        """The profile likelihood of λ for this model's X and raw response."""
        require_positive(self.y_raw_, self.response_)
        return BoxCoxProfile(self.qr_, self.y_raw_, self.formula_.has_intercept)

    def _resolve_transform(self) -> tuple[PowerTransformResult | None, Transform]:
        """The fitted λ (when the response is positive) and the transform actually applied."""
        choice = self.transform
        positive = bool(np.all(self.y_raw_ > 0))
        power = None
        if positive:
            try:
                power = power_transform(self.boxcox_profile())
            except TransformError as exc:
                if choice in ("boxcox", "boxcox-round"):
                    raise
                self.boxcox_refusal_ = str(exc)
        else:
            self.boxcox_refusal_ = f"Box-Cox: not available, the response '{self.response_}' has values <= 0"
        if not isinstance(choice, str):  # a finite number: _check_transform refused everything else
            require_positive(self.y_raw_, self.response_, f"bcPower({choice})")
            return power, Transform(float(choice))
        if choice == "none":
            return power, Transform()
        if choice == "log":
            require_positive(self.y_raw_, self.response_, "log")
            return power, Transform(0.0)
        if choice.startswith("auto"):
            if power is None or not self.ncv_untransformed_.p < self.ncv_alpha:
                return power, Transform()
        else:
            require_positive(self.y_raw_, self.response_)
        assert power is not None  # a positive response has one, or power_transform raised above
        return power, Transform(power.lambda_rounded if choice.endswith("round") else power.lambda_)


def _check_transform(choice: str | float) -> None:
    if isinstance(choice, (int, float)) and not isinstance(choice, bool):
        if not math.isfinite(choice):
            raise AnalysisError(f"transform: lambda must be finite, got {choice}")
        return
    if choice not in TRANSFORMS:
        raise AnalysisError(f"transform {choice!r}: expected one of {', '.join(TRANSFORMS)} or a number")


def coefficient_table(model: LinearModel) -> pd.DataFrame:
    """``coef(summary(lm))`` with R's names and stars."""
    r = model.results_
    p = model.p_values_
    return pd.DataFrame(
        {
            "term": list(model.column_names_),
            "Estimate": np.asarray(r.params, dtype=float),
            "Std. Error": model.std_errors_,
            "t value": model.t_values_,
            "Pr(>|t|)": p,
            "stars": [stars(v) for v in p],
        }
    )


@dataclass(frozen=True)
class FitSummary:
    """``summary.lm`` figures plus R's ``logLik``/``AIC``/``BIC`` (which count σ as a parameter)."""

    n: int
    n_excluded: int
    rank: int
    df_residual: int
    sigma: float
    r_squared: float
    adj_r_squared: float
    f_value: float
    f_numdf: int
    f_dendf: int
    f_pvalue: float
    loglik: float
    aic: float
    bic: float
    aliased: tuple[str, ...]
    transform: str
    warnings: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def fit_summary(model: LinearModel) -> FitSummary:
    r = model.results_
    n, rank = model.n_, model.qr_.rank
    loglik = float(r.llf)
    params = rank + 1
    r_squared, adj_r_squared, f_value, f_numdf, f_pvalue = _overall_test(model)
    return FitSummary(
        n=n,
        n_excluded=model.n_excluded_,
        rank=rank,
        df_residual=model.df_resid_,
        sigma=math.sqrt(float(r.ssr) / model.df_resid_),
        r_squared=r_squared,
        adj_r_squared=adj_r_squared,
        f_value=f_value,
        f_numdf=f_numdf,
        f_dendf=model.df_resid_,
        f_pvalue=f_pvalue,
        loglik=loglik,
        aic=-2.0 * loglik + 2.0 * params,
        bic=-2.0 * loglik + math.log(n) * params,
        aliased=model.aliased_,
        transform=model.transform_.label,
        warnings=model.warnings_,
    )


def _overall_test(model: LinearModel) -> tuple[float, float, float, int, float]:
    """R², adjusted R², F, its numerator df and p as ``summary.lm``: sums of squares about the mean when
    the *formula* has an intercept, about zero when it has none, even where the columns span a constant
    (statsmodels decides from the columns, which changes all five for ``y ~ f - 1``)."""
    fitted, resid = model.fitted_, model.resid_
    intercept = int(model.formula_.has_intercept)
    mss = float(np.sum((fitted - fitted.mean()) ** 2) if intercept else fitted @ fitted)
    rss = float(resid @ resid)
    numdf, df_resid = model.qr_.rank - intercept, model.df_resid_
    if numdf == 0:
        return 0.0, 0.0, math.nan, 0, math.nan
    r_squared = mss / (mss + rss)
    adj = 1.0 - (1.0 - r_squared) * (model.n_ - intercept) / df_resid
    f_value = (mss / numdf) / (rss / df_resid)
    return r_squared, adj, f_value, numdf, f_p_value(f_value, numdf, df_resid)

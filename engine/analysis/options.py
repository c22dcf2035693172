"""The analysis options a user can name (CLI flags, page widgets), importable without the numerics."""

#: Response transforms: a name, or a number (λ for ``bcPower``).
TRANSFORMS = ("none", "log", "boxcox", "boxcox-round", "auto", "auto-round")
#: ANOVA table types: 1 = sequential (R's ``summary(aov)``), 2 and 3 = ``car::Anova``.
ANOVA_TYPES = (1, 2, 3)
#: How repeated measurements of one configuration enter the fit.
REPEATS = ("all", "mean")
#: The automatic rule's threshold on ncvTest's p-value (Orio's DLMT).
NCV_ALPHA = 0.05

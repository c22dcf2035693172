# R's values for Tunelab's whole-factor tests (engine/analysis/factor_tests.py; tests/test_analysis_factor_tests.py).
# A factor's test is the partial F of every term that contains it: car's Type II row of the factor written as one
# term (poly(x, 3, raw = TRUE): x, x^2, x^3 together), and car::linearHypothesis on the coefficients of all its
# terms where it also enters an interaction. Run from the repository root:
#   Rscript tests/reference/make_factor_tests.R   (R 4.2 with car, Debian r-base-core and r-cran-car)
# It writes tests/reference/r/factor_tests.json: the data (drawn here, with a fixed seed) and R's numbers.
suppressPackageStartupMessages(library(car))
num <- function(x) ifelse(is.na(x), "null", sprintf("%.17g", x))
str <- function(x) paste0('"', x, '"')
arr <- function(items) paste0("[", paste(items, collapse = ", "), "]")
obj <- function(...) {
  fields <- list(...)
  paste0("{", paste(sprintf('"%s": %s', names(fields), unlist(fields)), collapse = ", "), "}")
}

set.seed(3138989)  # the DLMT paper's seed; the toy problem (docs/dlmt.md section 3) on 60 random runs
levels <- round(seq(-1, 1, 0.2), 1)  # the doubles of -1.0, -0.8, ..., as Python reads them
data <- as.data.frame(replicate(8, sample(levels, 60, replace = TRUE)))
names(data) <- paste0("x", 1:8)
data$y <- with(data, -1.5 * x1 + 1.3 * x3 + 3.1 * x5 - 1.4 * x7 + 1.35 * x8^2 + 1.6 * x1 * x3) + rnorm(60, 0, 0.6)

row <- function(factor, F, df1, df2, p) obj(factor = str(factor), F = num(F), df = num(df1), df_resid = num(df2), p = num(p))

# 1. Full cubic in every factor: car's Type II test of poly(x, 3, raw = TRUE), the factor's three terms at once.
cubic <- lm(y ~ poly(x1, 3, raw = TRUE) + poly(x2, 3, raw = TRUE) + poly(x3, 3, raw = TRUE) + poly(x4, 3, raw = TRUE) +
              poly(x5, 3, raw = TRUE) + poly(x6, 3, raw = TRUE) + poly(x7, 3, raw = TRUE) + poly(x8, 3, raw = TRUE), data)
table <- Anova(cubic, type = 2)
cubic_rows <- sapply(1:8, function(i) row(paste0("x", i), table[i, "F value"], table[i, "Df"],
                                          table["Residuals", "Df"], table[i, "Pr(>F)"]))

# 2. Interactions and a square: linearHypothesis on every coefficient of the factor's terms (equal to
# anova(model without them, model), checked below).
inter <- lm(y ~ x1 + x2 + x3 + x5 + I(x5^2) + x1:x3, data)
coefs <- list(x1 = c("x1", "x1:x3"), x2 = "x2", x3 = c("x3", "x1:x3"), x5 = c("x5", "I(x5^2)"))
reduced <- list(x1 = y ~ x2 + x3 + x5 + I(x5^2), x2 = y ~ x1 + x3 + x5 + I(x5^2) + x1:x3,
                x3 = y ~ x1 + x2 + x5 + I(x5^2), x5 = y ~ x1 + x2 + x3 + x1:x3)
inter_rows <- sapply(names(coefs), function(f) {
  h <- linearHypothesis(inter, paste(coefs[[f]], "= 0"))
  a <- anova(lm(reduced[[f]], data), inter)
  stopifnot(abs(h[2, "F"] - a[2, "F"]) < 1e-9 * h[2, "F"])
  row(f, h[2, "F"], h[2, "Df"], h[2, "Res.Df"], h[2, "Pr(>F)"])
})

columns <- sapply(names(data), function(n) paste0(str(n), ": ", arr(num(data[[n]]))))
cat(obj(r_version = str(R.version.string), car_version = str(as.character(packageVersion("car"))),
        data = paste0("{", paste(columns, collapse = ", "), "}"),
        cubic = obj(formula = str("y ~ poly(x1, 3, raw = TRUE) + ... + poly(x8, 3, raw = TRUE)"), rows = arr(cubic_rows)),
        interaction = obj(formula = str("y ~ x1 + x2 + x3 + x5 + I(x5^2) + x1:x3"), rows = arr(inter_rows))),
    "\n", file = "tests/reference/r/factor_tests.json")

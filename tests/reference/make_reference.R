# Regenerates the R reference values Tunelab's statistics are compared with (make reference; needs
# Debian r-base-core and r-cran-car). One JSON file per case of cases.csv, written into r/.
# Numbers are printed with 17 significant digits, so a double survives the round trip.
suppressPackageStartupMessages(library(car))
here <- "tests/reference"

num <- function(x) ifelse(is.na(x), "null", sprintf("%.17g", x))
str <- function(x) paste0('"', gsub('"', '\\\\"', x), '"')
arr <- function(items) paste0("[", paste(items, collapse = ", "), "]")
obj <- function(...) {
  fields <- list(...)
  paste0("{", paste(sprintf('"%s": %s', names(fields), unlist(fields)), collapse = ", "), "}")
}

coefficients_of <- function(fit) {
  table <- coef(summary(fit))
  arr(sapply(seq_len(nrow(table)), function(i) obj(
    term = str(rownames(table)[i]), estimate = num(table[i, 1]), se = num(table[i, 2]),
    t = num(table[i, 3]), p = num(table[i, 4]))))
}

# Box-Cox (car::powerTransform) and the standard error of lambda three ways: car's own (optim's
# finite-difference Hessian with step 1e-3 at its L-BFGS-B optimum), the analytic observed information
# at the exact root of the score, and a Richardson-extrapolated second difference as a check.
boxcox_of <- function(fit) {
  y <- model.response(model.frame(fit)); q <- qr(model.matrix(fit)); n <- length(y)
  gm <- exp(mean(log(y))); w <- log(y)
  z <- function(l) gm^(1 - l) * (y^l - 1) / l
  c1 <- function(l) (l * w * y^l - (y^l - 1)) / l^2
  c2 <- function(l) (l^2 * w^2 * y^l - 2 * l * w * y^l + 2 * (y^l - 1)) / l^3
  dz <- function(l) gm^(1 - l) * (c1(l) - log(gm) * (y^l - 1) / l)
  d2z <- function(l) gm^(1 - l) * (c2(l) - 2 * log(gm) * c1(l) + log(gm)^2 * (y^l - 1) / l)
  loglik <- function(l) -(n / 2) * log(sum(qr.resid(q, z(l))^2) / n)
  score <- function(l) { r <- qr.resid(q, z(l)); -n * sum(r * dz(l)) / sum(r^2) }
  pt <- powerTransform(fit)
  lam <- uniroot(score, pt$lambda + c(-0.5, 0.5), tol = 1e-15)$root
  r <- qr.resid(q, z(lam)); rss <- sum(r^2)
  info <- n * ((sum(qr.resid(q, dz(lam))^2) + sum(r * d2z(lam))) / rss - 2 * sum(r * dz(lam))^2 / rss^2)
  second <- function(h) -(loglik(lam + h) - 2 * loglik(lam) + loglik(lam - h)) / h^2
  obj(lambda_car = num(unname(pt$lambda)), se_car = num(sqrt(1 / pt$hessian[1, 1])),
      lambda = num(lam), se = num(1 / sqrt(info)),
      se_richardson = num(1 / sqrt((4 * second(5e-4) - second(1e-3)) / 3)),
      lambda_rounded = num(unname(pt$roundlam)))
}

# An ANOVA table (anova or car::Anova) as rows of term, Df, Sum Sq, F, p; car's refusal as its message.
anova_of <- function(make) {
  table <- tryCatch(make(), error = function(e) conditionMessage(e))
  if (is.character(table)) return(obj(refused = str(table)))
  table <- as.data.frame(table)
  ss <- if ("Sum Sq" %in% names(table)) table[["Sum Sq"]] else table[["Sum of Sq"]]
  obj(rows = arr(sapply(seq_len(nrow(table)), function(i) obj(
    term = str(rownames(table)[i]), df = num(table$Df[i]), ss = num(ss[i]),
    F = num(table[["F value"]][i]), p = num(table[["Pr(>F)"]][i])))))
}

# summary.lm's R², adjusted R² and overall F (R decides centred or not from the formula's intercept).
summary_of <- function(fit) {
  s <- summary(fit); f <- s$fstatistic
  obj(r_squared = num(s$r.squared), adj_r_squared = num(s$adj.r.squared), f_value = num(f[["value"]]),
      f_numdf = num(f[["numdf"]]), f_dendf = num(f[["dendf"]]),
      f_p = num(pf(f[["value"]], f[["numdf"]], f[["dendf"]], lower.tail = FALSE)),
      aliased = arr(vapply(names(which(is.na(coef(fit)))), str, "")))
}

cases <- read.csv(file.path(here, "cases.csv"), stringsAsFactors = FALSE)
for (i in seq_len(nrow(cases))) {
  case <- cases[i, ]
  data <- read.csv(file.path(here, "cases", case$data))
  fit <- lm(as.formula(case$formula), data = data)
  X <- model.matrix(fit)
  json <- obj(
    name = str(case$name), formula = str(case$formula), r_version = str(R.version.string),
    car_version = str(as.character(packageVersion("car"))), kappa = num(kappa(X, exact = TRUE)),
    coefficients = coefficients_of(fit), sigma = num(summary(fit)$sigma),
    df_residual = num(fit$df.residual), summary = summary_of(fit),
    anova1 = anova_of(function() anova(fit)), anova2 = anova_of(function() Anova(fit, type = 2)),
    anova3 = anova_of(function() {  # car's Type III is meant for sum-to-zero contrasts
      old <- options(contrasts = c("contr.sum", "contr.poly")); on.exit(options(old))
      Anova(lm(as.formula(case$formula), data = data), type = 3)
    }),
    boxcox = if (case$boxcox == "yes") boxcox_of(fit) else "null")
  writeLines(json, file.path(here, "r", paste0(case$name, ".json")))
  cat("wrote", case$name, "\n")
}

# Upper tails of F in log space, down where the p-value underflows a double.
grid <- list(c(12.5, 3, 20), c(1000, 8, 500), c(3000, 2, 1000), c(5000, 1, 2000), c(2000, 5, 5000), c(1e25, 1, 30),
             c(1e21, 1, 30), c(40, 1, 1))
tails <- arr(sapply(grid, function(g) obj(F = num(g[1]), df1 = num(g[2]), df2 = num(g[3]),
                                          log_p = num(pf(g[1], g[2], g[3], lower.tail = FALSE, log.p = TRUE)))))

# The p-values themselves, F's (pf) and two-sided t's (summary.lm's 2 * pt(-|t|, df)), where scipy's f.sf is
# off (both df even, p < 1e-280) or underflows, down to the smallest subnormal doubles. Each statistic is the
# root, in log scale, of R's own log p at the target log10 p, so each p lies where it was meant to.
root <- function(gap) exp(uniroot(function(l) gap(exp(l)), c(log(1e-3), log(1e300)), tol = 1e-15)$root)
f_grid <- list(c(40, 200, -298), c(24, 2000, -298), c(40, 2000, -279), c(40, 194, -299), c(10, 100, -305),
               c(2, 500, -300), c(3, 20, -310), c(5, 60, -320), c(1, 30, -323), c(8, 40, -100), c(4, 50, -5))
p_tails <- arr(sapply(f_grid, function(g) {
  f <- root(function(f) pf(f, g[1], g[2], lower.tail = FALSE, log.p = TRUE) / log(10) - g[3])
  obj(F = num(f), df1 = num(g[1]), df2 = num(g[2]), p = num(pf(f, g[1], g[2], lower.tail = FALSE)))
}))
t_grid <- list(c(5, -300), c(30, -320), c(200, -310), c(1, -150), c(10, -3), c(3, -50), c(1000, -200), c(194, -323))
t_tails <- arr(sapply(t_grid, function(g) {
  t <- root(function(t) (log(2) + pt(t, g[1], lower.tail = FALSE, log.p = TRUE)) / log(10) - g[2])
  obj(t = num(t), df = num(g[1]), p = num(2 * pt(-t, g[1])))
}))
writeLines(obj(r_version = str(R.version.string), tails = tails, p_tails = p_tails, t_tails = t_tails),
           file.path(here, "r", "f_tails.json"))
cat("wrote f_tails\n")

# model.matrix's column names where R's coding rule decides between contrasts and a column per level: without
# an intercept (the first factor gets every level, also inside an interaction), and where a term without one
# of its factors lies inside an earlier term (contrasts) or not (every level).
formulas <- c("~ 0 + b + x", "~ 0 + x + b", "~ 0 + x + x:b", "~ 0 + b:x", "~ 0 + f + b", "~ 0 + b + f", "~ 0 + f:g",
              "~ 0 + x + f:g", "~ 0 + f + f:g", "~ 0 + g + f:g", "~ 0 + x:f + g", "~ 0 + f + g + f:g", "~ 0 + x:f + x:g",
              "~ 0 + x:b + b", "~ 0 + b + x + b:x", "~ x + x:b", "~ b + b:x", "~ f:g", "~ f + f:g", "~ g + f:g",
              "~ x + f:x + f:g", "~ x + b:f", "~ b*f*g")
data <- read.csv(file.path(here, "cases", "logical_factors.csv"))
matrices <- arr(sapply(formulas, function(f) obj(
  formula = str(f), columns = arr(vapply(colnames(model.matrix(as.formula(f), data)), str, "")))))
writeLines(obj(r_version = str(R.version.string), data = str("logical_factors.csv"), matrices = matrices),
           file.path(here, "r", "model_matrix_names.json"))
cat("wrote model_matrix_names\n")

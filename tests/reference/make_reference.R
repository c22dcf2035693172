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
    df_residual = num(fit$df.residual))
  writeLines(json, file.path(here, "r", paste0(case$name, ".json")))
  cat("wrote", case$name, "\n")
}

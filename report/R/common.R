# Shared by every report: packages, the figure theme and the table reader. Figures draw what
# the Python stages computed and converted to shown units (tables in data/results/<campaign>/);
# R only reads, prints and draws.
suppressPackageStartupMessages({
  library(ggplot2)
  library(data.table)
})
# Quarto's execute options are not read by rmarkdown: the same settings for knitr here.
knitr::opts_chunk$set(echo = FALSE, warning = FALSE, message = FALSE, dev = "png", dpi = 96,
                      fig.width = 9, fig.height = 5)
theme_set(theme_bw(base_size = 11) + theme(legend.position = "bottom"))
# Columns that look like numbers but are names: version 1.10 must not become 1.1.
text_columns <- c("library_version", "night", "size", "run_id", "cell_id", "panel", "series", "params",
                  "transport", "workload", "network_profile")
read_csv <- function(path) {
  if (!file.exists(path)) stop(sprintf("%s: missing; run the stats stage first", path))
  cols <- names(fread(path, nrows = 0))
  fread(path, na.strings = c("", "NA"),
        colClasses = list(character = intersect(text_columns, cols)))
}
read_table <- function(dir, name) read_csv(file.path(dir, name))
# Text printed into Markdown (file names such as __init__.py, globs, ids, a prototype's stderr) is
# escaped, so that it is shown as written and not read as emphasis, math or markup (typst also
# chokes on the result). Brackets and bars become entities: a backslash before them reads as
# display math (\[ \]) in rmarkdown's Markdown, and kable turns | into &#124; after the backslash.
md <- function(x) {
  x <- gsub("&", "&amp;", x, fixed = TRUE)
  x <- gsub("([\\\\`*_<>#$~^])", "\\\\\\1", x, perl = TRUE)
  x <- gsub("[", "&#91;", x, fixed = TRUE)
  x <- gsub("]", "&#93;", x, fixed = TRUE)
  x <- gsub("@", "&#64;", x, fixed = TRUE)  # kcp@1.10 is a version, not an e-mail address
  x <- gsub("--", "-\\-", x, fixed = TRUE)  # a flag's two hyphens, not an en dash
  gsub("|", "&#124;", x, fixed = TRUE)
}
# Text with `code` spans (the check-list's commands): the spans stay code, so a command is shown
# and pasted as written (no smart dashes, no literal backticks); the rest is escaped by md().
md_code <- function(x) vapply(as.character(x), function(s) {
  parts <- strsplit(s, "`", fixed = TRUE)[[1]]
  if (length(parts) < 2) return(md(s))
  paste(ifelse(seq_along(parts) %% 2 == 0, paste0("`", parts, "`"), md(parts)), collapse = "")
}, "", USE.NAMES = FALSE)
`%||%` <- function(a, b) if (is.null(a)) b else a  # base R has it only from 4.4
options(knitr.kable.NA = "")  # an empty cell, not "NA", where a table has no value

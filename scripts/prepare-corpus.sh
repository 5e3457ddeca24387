#!/usr/bin/env bash
# Writes the training corpus, build/data/austen.txt: Jane Austen's six novels as Debian ships them
# (package r-cran-janeaustenr, texts public domain, package MIT), one line of text per line,
# novels in the package's order. Needs R (installed with the package).
set -euo pipefail
cd "$(dirname "$0")/.."
if ! Rscript -e 'library(janeaustenr)' >/dev/null 2>&1; then
  sudo=""; [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get install -y -qq r-cran-janeaustenr >/dev/null
fi
mkdir -p build/data
Rscript -e 'library(janeaustenr); b <- austen_books(); writeLines(as.character(b$text), "build/data/austen.txt", useBytes = TRUE)'
echo "prepare-corpus: $(wc -c < build/data/austen.txt) bytes in build/data/austen.txt ($(dpkg-query -W -f='${Package} ${Version}' r-cran-janeaustenr))"

#!/bin/sh
# Install Debian's Tesseract OCR for scanned PDFs and images (rag/reading/ocr.py), unless it is already there:
# the engine, its orientation detection (osd) and the language data for English, Portuguese, Spanish, German,
# French and Italian. pytesseract (a Python dependency of the project) drives the `tesseract` binary.
# Needs root (or sudo) and the distribution's package mirrors. Without it the app still runs, and says that
# scanned pages and images are not read. Also DejaVu's fonts (fonts-dejavu-core): the OCR tests set their pages in them.
set -eu
LANGS="osd eng por spa deu fra ita"
if command -v tesseract >/dev/null 2>&1; then
    have=" $(tesseract --list-langs 2>/dev/null | tail -n +2 | tr '\n' ' ') "
    missing=""
    for lang in $LANGS; do
        case "$have" in *" $lang "*) ;; *) missing="$missing $lang" ;; esac
    done
    if [ -z "$missing" ] && [ -f /usr/share/fonts/truetype/dejavu/DejaVuSerif.ttf ]; then
        echo "tesseract already installed: $(tesseract --version 2>/dev/null | head -n 1), languages:$have"
        exit 0
    fi
fi
sh "$(dirname "$0")/apt-install.sh" tesseract-ocr fonts-dejavu-core \
    $(for lang in $LANGS; do printf 'tesseract-ocr-%s ' "$lang"; done)
tesseract --version | head -n 1
tesseract --list-langs

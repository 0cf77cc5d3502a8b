# shellcheck shell=bash
# What the Szeged recipe's sources need (sourced by download.sh and check_data.sh).

# nerkor_howto WHO: how to get the NerKor news subset, on stdout, WHO prefixing the line.
nerkor_howto() {
  cat <<MSG
$1: the NerKor news subset was not found at $NERKOR (NERKOR, conf/db.sh).
  Get it (CC BY-SA 4.0) and point NERKOR at a folder with train/ and devel/:
    git clone https://github.com/nytud/NYTK-NerKor && cd NYTK-NerKor
    git checkout 7c9c5b5f1f3ec7f94e724e0b92f3afa8eb262d00
    mkdir -p ../nerkor_news && cp -r data/train/news ../nerkor_news/train \\
      && cp -r data/devel/news ../nerkor_news/devel
MSG
}

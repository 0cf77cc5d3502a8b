# shellcheck shell=bash
# conf/db.sh: where the corpora are (sourced by local/<corpus>/download.sh).
# A directory that exists = use this local copy (stage 0 links it and checks its
# checksums, downloading nothing); otherwise stage 0 downloads the corpus.
# Set the variables in the environment to override these defaults.
punct_db_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

# IWSLT 2012 TED punctuation benchmark (Che et al. 2016 package): train2012 dev2012
# test2011 test2011asr + the tst2011 mteval XML, flat or in che_original/ and raw_xml/.
# Default: the shared copy next to the repository (CI).
IWSLT2012=${IWSLT2012:-$punct_db_root/../shared/data/iwslt2012}
# Where stage 0 downloads it from when the directory above does not exist.
IWSLT2012_URL=${IWSLT2012_URL:-https://raw.githubusercontent.com/IsaacChanghau/neural_sequence_labeling/10b5585235d5500b78bff81d4f8f3c818cd3af00/data/raw/LREC}
export IWSLT2012 IWSLT2012_URL

# Hungarian Szeged recipe (egs/szeged/punct1). Public subsets, default: the shared copies.
# UD_Hungarian-Szeged (CoNLL-U, CC BY-NC-SA 3.0), NerKor news (CoNLL-U Plus, CC BY-SA 4.0:
# train/ and devel/), Szeged NER (valid.txt, research use).
SZEGED_UD=${SZEGED_UD:-$punct_db_root/../shared/data/ud_hungarian_szeged}
NERKOR=${NERKOR:-$punct_db_root/../shared/data/nerkor_news}
SZEGED_NER=${SZEGED_NER:-$punct_db_root/../shared/data/szeged_ner}
# Where stage 0 downloads the UD files from when SZEGED_UD does not exist (pinned commit).
SZEGED_UD_URL=${SZEGED_UD_URL:-https://raw.githubusercontent.com/UniversalDependencies/UD_Hungarian-Szeged/8f08ba648e6f6345212a721b7cb1ad78c5924f0e}
# The full Szeged Treebank (licence-gated, rgai.inf.u-szeged.hu; Nagy et al. 2021's data):
# a CoNLL-U file/folder or szeged.allChunks.newKr.unshuffled-style CoNLL (form in column 2).
# Empty = not available (the recipe runs on the public subsets and says how to get it).
SZEGED_TREEBANK=${SZEGED_TREEBANK:-}
export SZEGED_UD NERKOR SZEGED_NER SZEGED_UD_URL SZEGED_TREEBANK

# mTEDx / MuST-C recipe for UniPunc (egs/mtedx/punct1).
# Multilingual TEDx (OpenSLR 100, CC BY-NC-ND 4.0): a folder holding <lang>-<lang>/ (or
# that folder itself); missing -> stage 0 downloads mtedx_<lang>.tgz from MTEDX_URL.
MTEDX=${MTEDX:-$punct_db_root/../shared/data/mtedx}
MTEDX_LANG=${MTEDX_LANG:-es}
MTEDX_URL=${MTEDX_URL:-https://www.openslr.org/resources/100}
# sha256 of mtedx_<lang>.tgz. None is pinned (OpenSLR publishes no checksums and the
# archive could not be fetched here): empty = not verified, and stage 0 says so and
# prints the archive's sha256 for you to pin here.
MTEDX_SHA256=${MTEDX_SHA256:-}
# MuST-C v1.0 (licence-gated, https://ict.fbk.eu/must-c/): an en-xx folder (holding
# data/{train,dev,tst-COMMON}); empty = not available. MUSTC1_PATH is what the UniPunc
# JSONL files call <MUSTC1_PATH> (the en-xx/data folder of the same copy).
MUSTC=${MUSTC:-}
MUSTC1_PATH=${MUSTC1_PATH:-${MUSTC:+$MUSTC/data}}
# UniPunc's test files (test-audio.jsonl, test-mixed.jsonl; their audio is MuST-C's).
UNIPUNC_JSONL=${UNIPUNC_JSONL:-$punct_db_root/../shared/data/mustc_unipunc}
export MTEDX MTEDX_LANG MTEDX_URL MTEDX_SHA256 MUSTC MUSTC1_PATH UNIPUNC_JSONL
# Hungarian BABEL recipe (egs/babel_hu/punct1), licence-gated (ELRA): your copy in the BABEL
# layout (<subset>/audio/*.sph|wav, <subset>/transcription/*.txt). Empty = not available
# (stage 0 exits 2 with instructions). BABEL_HU_PUNCT: optional punctuated transcripts.
BABEL_HU=${BABEL_HU:-}
BABEL_HU_PUNCT=${BABEL_HU_PUNCT:-}
export BABEL_HU BABEL_HU_PUNCT
# mintzai-ST (egs/mintzai_st/punct1; Basque Parliament, CC BY-NC-ND 4.0, about 25 GB).
# MINTZAI_ST: a local copy, either the extracted folder (holding v1.0/, or MintzAI-ST/v1.0/)
# or the tarball itself; empty or absent = stage 0 downloads MINTZAI_ST_URL.
MINTZAI_ST=${MINTZAI_ST:-}
MINTZAI_ST_URL=${MINTZAI_ST_URL:-https://datasets.vicomtech.org/v2-mintzai-st/mintzai-st-corpus_v1.0.tar.gz}
# The tarball's sha256: no verified value was published; empty = not pinned (stage 0 then
# records the sha256 it finds in downloads/mintzai_st/SHA256SUMS and checks later runs
# against it). Pin it here once you trust a copy.
MINTZAI_ST_SHA256=${MINTZAI_ST_SHA256:-}
# Free space kept beyond the tarball while downloading, for its extraction (GB).
MINTZAI_ST_EXTRACT_GB=${MINTZAI_ST_EXTRACT_GB:-30}
export MINTZAI_ST MINTZAI_ST_URL MINTZAI_ST_SHA256 MINTZAI_ST_EXTRACT_GB

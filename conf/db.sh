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

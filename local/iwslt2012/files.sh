# shellcheck shell=bash
# The files of Che et al.'s IWSLT 2012 package that stage 1 reads, and where they lie in
# a local copy (sourced by download.sh and check_data.sh).

# name sha256 (files stage 1 needs; "-" = not pinned, optional)
# shellcheck disable=SC2034  # read by the scripts that source this file
files="_ReadMe_.txt 3759bbb7e324a7bc6445fc4a33dfef1cc3bd3d8fe56abf3c6d65f506fc421683
dev2012 b33a14cace4c3869fe2ed80fe064f23dff8722930cc4f5ea9ff341cecc02aa87
test2011 b1464ef9741c93ae6756c214f9d71208d43839bf7e4bdb7916ff432dab9362ab
IWSLT12.TED.MT.tst2011.en-fr.en.xml 568780cef93ac9ef43279dad25a0adfd3eecd96575da836085a26496aceb97ed
train2012 -
test2011asr -"

# locate NAME in a copy: flat, or in the subdirectories of the shared layout.
locate() {
  local path
  for path in "$1/$2" "$1/che_original/$2" "$1/raw_xml/$2" "$1/LREC/$2"; do
    [ -f "$path" ] && { echo "$path"; return 0; }
  done
  return 1
}

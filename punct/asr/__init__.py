"""Speech recognisers (audio -> timed words): pocketsphinx, ESPnet, CTC (wav2vec2/MMS), and
the CTC acoustic model they share with the ``ctc`` aligner (:mod:`punct.asr.ctc_model`).
Used by ``restore --asr`` (:mod:`punct.infer.asr`), the ASR condition and the aligners."""

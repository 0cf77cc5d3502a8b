"""Sub-word machinery shared by the families built on a pretrained BERT-like encoder.

- ``featurizer``: ``SubwordFeaturizer``, windows of sub-word pieces with one prediction
  slot per word (autopunct, nagy, courtland, unipunc's pretrained lexical encoder);
- ``encoder``: ``EncoderModel``, the encoder inside a model (building it offline, which
  layers train, the freezing schedule, the frozen-state cache);
- ``heads``: ``Head`` and ``PunctCapModel``, the punctuation and capitalisation heads
  (autopunct, unipunc);
- ``tagger``: ``SubwordTagger``, per-position mark logits from a family's head (nagy,
  courtland).

Loading encoders and tokenizers by name is ``punct.models.encoders``; the silence
embedding is ``punct.models.silence``.
"""

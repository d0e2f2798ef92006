// qkscope/train/text.hpp — the character vocabulary of the next-character task (task
// "text", train/tasks.hpp) and the one function that turns text into its tokens. The core
// never reads files: the caller passes the corpus as a string (TrainConfig::text).
//
// Vocabulary (kVocabulary, token i = character i, V = 39):
//   0      ' '   every run of whitespace (space, tab, CR, LF, ...) becomes one space
//   1..26  a..z  letters; A..Z are folded to lower case first
//   27..37 . , ; : ! ? ' " - ( )
//   38     '#'   "other": digits, every other ASCII character and every non-ASCII
//                character (one UTF-8 sequence = one character = one token)
// So the encoded text is itself a string over kVocabulary (decode_text), and encoding it
// again changes nothing.
//
// Split of an encoded corpus of n tokens: the last floor(n / 10) tokens are held out (never
// trained on); training windows are drawn from the first n - floor(n / 10).
#pragma once

#include <cmath>
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace qkscope::train {

/// The characters of the tokens, in token order; the last one is the "other" token.
inline constexpr std::string_view kVocabulary = " abcdefghijklmnopqrstuvwxyz.,;:!?'\"-()#";
inline constexpr int kTextVocab = int(kVocabulary.size());  // V = 39
inline constexpr int kOtherToken = kTextVocab - 1;         // '#'

/// Token of one ASCII character that is not whitespace (see the file header).
inline int char_token(unsigned char ch) {
  if (ch >= 'A' && ch <= 'Z') ch = static_cast<unsigned char>(ch - 'A' + 'a');
  const std::size_t at = kVocabulary.find(char(ch));
  return at == std::string_view::npos ? kOtherToken : int(at);
}

/// Tokens of `text` (UTF-8): letters folded to lower case, each whitespace run one space,
/// every other character the other token (a multi-byte UTF-8 character counts once).
inline std::vector<int> encode_text(std::string_view text) {
  std::vector<int> out;
  out.reserve(text.size());
  bool in_space = false;
  for (const char c : text) {
    const auto ch = static_cast<unsigned char>(c);
    if ((ch >= 0x80 && ch < 0xC0)) continue;  // UTF-8 continuation byte: same character
    const bool space = ch == ' ' || (ch >= '\t' && ch <= '\r');
    if (space && in_space) continue;
    in_space = space;
    out.push_back(space ? 0 : ch >= 0x80 ? kOtherToken : char_token(ch));
  }
  return out;
}

/// The characters of tokens (each in [0, kTextVocab)).
inline std::string decode_text(const std::vector<int>& tokens) {
  std::string s;
  s.reserve(tokens.size());
  for (const int t : tokens) s += kVocabulary[std::size_t(t)];
  return s;
}

/// Where the held-out part of an encoded corpus of n tokens starts (the last n / 10).
inline std::size_t heldout_start(std::size_t n) { return n - n / 10; }

/// Held-out windows of length L: window k reads tokens s + kL .. s + kL + L - 1 and predicts
/// s + kL + 1 .. s + kL + L (s = heldout_start), so it needs one token after it.
inline int heldout_windows(std::size_t n, int L) {
  const std::size_t held = n - heldout_start(n);
  return held < std::size_t(L) + 1 ? 0 : int((held - 1) / std::size_t(L));
}

/// The unigram baseline on the held-out windows' targets: predict every character with its
/// frequency in the training part (add-one smoothing). loss in nats; accuracy = fraction of
/// targets equal to the most frequent training character.
struct UnigramBaseline {
  double loss = 0, accuracy = 0;
};

inline UnigramBaseline unigram_baseline(const std::vector<int>& corpus, int L) {
  const std::size_t split = heldout_start(corpus.size());
  std::vector<double> count(std::size_t(kTextVocab), 1.0);  // add-one
  double total = kTextVocab;
  for (std::size_t i = 0; i < split; ++i) count[std::size_t(corpus[i])] += 1, total += 1;
  int best = 0;
  for (int k = 1; k < kTextVocab; ++k) best = count[std::size_t(k)] > count[std::size_t(best)] ? k : best;
  UnigramBaseline u;
  const int W = heldout_windows(corpus.size(), L);
  if (W == 0) return u;
  for (std::size_t i = split + 1; i <= split + std::size_t(W) * std::size_t(L); ++i) {
    u.loss -= std::log(count[std::size_t(corpus[i])] / total);
    u.accuracy += corpus[i] == best;
  }
  u.loss /= double(W) * L;
  u.accuracy /= double(W) * L;
  return u;
}

}  // namespace qkscope::train

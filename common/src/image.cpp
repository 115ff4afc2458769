// Provided by the kit. PGM/PPM reading and writing (lab/image.h).
//
// The reader is a small hand-written scanner over a FILE*: header tokens are read one
// character at a time (so comments can sit anywhere), binary samples with fread in
// bounded chunks. Before allocating, it compares what the header promises with what the
// file holds, so a corrupt header cannot make it allocate gigabytes for nothing.
#include "lab/image.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <limits>
#include <memory>
#include <system_error>

namespace lab {
namespace {

using File = std::unique_ptr<std::FILE, int (*)(std::FILE*)>;

[[noreturn]] void fail(const std::string& where, const std::string& problem) {
  throw ImageError(where + ": " + problem);
}

bool is_space(int c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'; }
bool is_digit(int c) { return c >= '0' && c <= '9'; }

// A character for a message: itself when printable, else \xNN.
std::string printable(int c) {
  if (c == EOF) return "end of file";
  if (c >= 0x20 && c < 0x7F) return std::string(1, static_cast<char>(c));
  char buf[8];
  std::snprintf(buf, sizeof buf, "\\x%02X", static_cast<unsigned>(c) & 0xFFu);
  return buf;
}

std::string where_pixel(std::uint64_t index, int width, int channels) {
  const std::uint64_t pixel = index / static_cast<std::uint64_t>(channels);
  std::string s = "pixel (x " + std::to_string(pixel % static_cast<std::uint64_t>(width)) + ", y " +
                  std::to_string(pixel / static_cast<std::uint64_t>(width)) + ")";
  if (channels == 3) s += std::string(" channel ") + "RGB"[index % 3];
  return s;
}

// Numbers larger than this are reported as "too large" without being accumulated further.
constexpr std::uint64_t kNumberCap = std::uint64_t{1} << 40;

// A file being read, with its position and, for regular files, its size.
class Reader {
 public:
  explicit Reader(const std::string& path) : m_path(path), m_file(nullptr, &std::fclose) {
    std::error_code ec;
    const auto status = std::filesystem::status(path, ec);
    if (std::filesystem::is_directory(status)) fail(path, "is a directory, not an image file");
    m_file.reset(std::fopen(path.c_str(), "rb"));
    if (!m_file) fail(path, std::string("cannot open for reading: ") + std::strerror(errno));
    if (std::filesystem::is_regular_file(status)) {
      const auto size = std::filesystem::file_size(path, ec);
      if (!ec) {
        m_size = static_cast<std::uint64_t>(size);
        m_size_known = true;
      }
    }
  }

  const std::string& path() const { return m_path; }

  int get() {
    const int c = std::getc(m_file.get());
    if (c == EOF) {
      if (std::ferror(m_file.get())) fail(m_path, std::string("read error: ") + std::strerror(errno));
      return EOF;
    }
    ++m_pos;
    return c;
  }

  void unget(int c) {
    if (c == EOF) return;
    std::ungetc(c, m_file.get());
    --m_pos;
  }

  // Bytes left after the current position, or max when the size is unknown (a pipe).
  std::uint64_t remaining() const {
    if (!m_size_known) return std::numeric_limits<std::uint64_t>::max();
    return m_size > m_pos ? m_size - m_pos : 0;
  }

  // Reads up to `n` bytes into `dst`; returns how many were read.
  std::size_t read(unsigned char* dst, std::size_t n) {
    const std::size_t got = std::fread(dst, 1, n, m_file.get());
    m_pos += got;
    if (got < n && std::ferror(m_file.get())) fail(m_path, std::string("read error: ") + std::strerror(errno));
    return got;
  }

  // Skips whitespace and comments; returns the first other character (or EOF).
  int skip_space_and_comments() {
    for (;;) {
      int c = get();
      if (is_space(c)) continue;
      if (c != '#') return c;
      while (c != '\n' && c != '\r' && c != EOF) c = get();
    }
  }

  // The rest of a token starting with `first` (for messages), at most 24 characters.
  std::string token_from(int first) {
    std::string text = printable(first);
    for (int c = get(); c != EOF && !is_space(c) && c != '#'; c = get()) {
      if (text.size() < 24) text += printable(c);
    }
    return text;
  }

  // Reads one unsigned decimal number; `what()` names it in messages (built only when
  // one is needed). Sets *too_large (and returns kNumberCap) when the number reaches
  // kNumberCap. Returns false at the end of the file (only whitespace and comments left).
  template <class What>
  bool number(What what, std::uint64_t* value, bool* too_large) {
    int c = skip_space_and_comments();
    if (c == EOF) return false;
    if (c == '-') fail(m_path, "negative " + what() + " '" + token_from(c) + "'");
    if (!is_digit(c)) fail(m_path, "non-numeric " + what() + " '" + token_from(c) + "'");
    std::uint64_t v = 0;
    bool big = false;
    std::string text;
    for (; is_digit(c); c = get()) {
      if (text.size() < 24) text += static_cast<char>(c);
      if (!big) {
        v = v * 10 + static_cast<std::uint64_t>(c - '0');
        if (v >= kNumberCap) big = true;
      }
    }
    if (c != EOF && !is_space(c) && c != '#') {
      fail(m_path, "non-numeric " + what() + " '" + text + token_from(c) + "'");
    }
    unget(c);
    *value = big ? kNumberCap : v;
    *too_large = big;
    return true;
  }

 private:
  std::string m_path;
  File m_file;
  std::uint64_t m_size = 0, m_pos = 0;
  bool m_size_known = false;
};

struct Header {
  bool binary = true;
  int channels = 1;
  std::uint64_t width = 0, height = 0, maxval = 0;
};

// Reads one header number and rejects a missing, zero or too large one.
std::uint64_t header_number(Reader& in, const std::string& what, std::uint64_t max) {
  std::uint64_t v = 0;
  bool too_large = false;
  if (!in.number([&] { return what; }, &v, &too_large)) {
    fail(in.path(), "truncated header: the file ends before the " + what);
  }
  if (v == 0) fail(in.path(), what + " is 0; it must be at least 1");
  if (too_large || v > max) {
    fail(in.path(), what + " " + (too_large ? "of " + std::to_string(kNumberCap) + " or more" : std::to_string(v)) +
                        " is too large (at most " + std::to_string(max) + ")");
  }
  return v;
}

Header read_header(Reader& in) {
  Header h;
  const int p = in.get();
  if (p == EOF) fail(in.path(), "empty file; expected a Netpbm magic number (P2, P3, P5 or P6)");
  const int k = in.get();
  if (p != 'P' || k < '1' || k > '7') {
    fail(in.path(), "bad magic number '" + printable(p) + (k == EOF ? "" : printable(k)) +
                        "': not a PGM/PPM file (expected P2, P3, P5 or P6)");
  }
  switch (k) {
    case '2': h.binary = false; h.channels = 1; break;
    case '3': h.binary = false; h.channels = 3; break;
    case '5': h.binary = true; h.channels = 1; break;
    case '6': h.binary = true; h.channels = 3; break;
    case '1':
    case '4': fail(in.path(), std::string("P") + static_cast<char>(k) + " is a PBM bitmap; only PGM (P2, P5) and PPM (P3, P6) are read");
    default: fail(in.path(), std::string("P") + static_cast<char>(k) + " (PAM) is not supported; only PGM (P2, P5) and PPM (P3, P6) are read");
  }
  const int after = in.get();
  if (!is_space(after) && after != '#') {
    fail(in.path(), "bad magic number 'P" + std::string(1, static_cast<char>(k)) + printable(after) +
                        "': expected whitespace after P" + std::string(1, static_cast<char>(k)));
  }
  in.unget(after);
  h.width = header_number(in, "width", static_cast<std::uint64_t>(std::numeric_limits<int>::max()));
  h.height = header_number(in, "height", static_cast<std::uint64_t>(std::numeric_limits<int>::max()));
  h.maxval = header_number(in, "maxval", 65535);
  const std::uint64_t samples = h.width * h.height * static_cast<std::uint64_t>(h.channels);  // < 2^62 + 2^63: no overflow
  if (h.width > kMaxImageSamples || h.height > kMaxImageSamples || samples > kMaxImageSamples) {
    fail(in.path(), std::to_string(h.width) + " x " + std::to_string(h.height) + " pixels x " +
                        std::to_string(h.channels) + " channel(s) is more samples than this reader accepts (" +
                        std::to_string(kMaxImageSamples) + ")");
  }
  // One whitespace character (or a comment up to its newline) ends the header; number()
  // has already refused anything else right after maxval.
  int c = in.get();
  if (c == '#') {
    while (c != '\n' && c != '\r' && c != EOF) c = in.get();
  }
  if (c == EOF) fail(in.path(), "truncated file: no pixel data after the header");
  return h;
}

void read_binary(Reader& in, const Header& h, Image& img) {
  const std::uint64_t count = h.width * h.height * static_cast<std::uint64_t>(h.channels);
  const std::uint64_t bps = h.maxval > 255 ? 2 : 1;
  const std::uint64_t needed = count * bps;
  auto truncated = [&](std::uint64_t have) {
    fail(in.path(), "truncated pixel data: the header promises " + std::to_string(h.width) + " x " +
                        std::to_string(h.height) + " x " + std::to_string(h.channels) + " samples of " +
                        std::to_string(bps) + " byte(s) = " + std::to_string(needed) + " bytes, but only " +
                        std::to_string(have) + " bytes follow the header");
  };
  if (in.remaining() < needed) truncated(in.remaining());
  // Read in bounded chunks, so that a file whose size is unknown (a pipe) cannot make
  // us allocate more than it delivers.
  std::vector<unsigned char> raw;
  const std::uint64_t chunk = std::uint64_t{1} << 24;
  while (raw.size() < needed) {
    const std::size_t old = raw.size();
    const std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(chunk, needed - old));
    raw.resize(old + n);
    const std::size_t got = in.read(raw.data() + old, n);
    if (got < n) truncated(old + got);
  }
  img.samples.resize(static_cast<std::size_t>(count));
  for (std::size_t i = 0; i < img.samples.size(); ++i) {
    const unsigned v = bps == 1 ? raw[i] : (static_cast<unsigned>(raw[2 * i]) << 8) | raw[2 * i + 1];
    if (v > h.maxval) {
      fail(in.path(), "sample value " + std::to_string(v) + " at " + where_pixel(i, img.width, img.channels) +
                          " is above maxval " + std::to_string(h.maxval));
    }
    img.samples[i] = static_cast<std::uint16_t>(v);
  }
}

void read_ascii(Reader& in, const Header& h, Image& img) {
  const std::uint64_t count = h.width * h.height * static_cast<std::uint64_t>(h.channels);
  // Every sample needs a digit and all but the last a separator: a cheap check that the
  // file can hold what the header promises, before reserving memory for it.
  if (in.remaining() < 2 * count - 1) {
    fail(in.path(), "truncated pixel data: the header promises " + std::to_string(count) +
                        " ASCII samples, but only " + std::to_string(in.remaining()) +
                        " bytes follow the header (each sample needs a digit and a separator)");
  }
  if (in.remaining() != std::numeric_limits<std::uint64_t>::max()) img.samples.reserve(static_cast<std::size_t>(count));
  for (std::uint64_t i = 0; i < count; ++i) {
    auto what = [&] { return "sample at " + where_pixel(i, img.width, img.channels); };
    std::uint64_t v = 0;
    bool too_large = false;
    if (!in.number(what, &v, &too_large)) {
      fail(in.path(), "truncated pixel data: found " + std::to_string(i) + " of the " + std::to_string(count) +
                          " samples the header promises");
    }
    if (too_large || v > h.maxval) {
      fail(in.path(), what() + " (" + (too_large ? std::to_string(kNumberCap) + " or more" : std::to_string(v)) +
                          ") is above maxval " + std::to_string(h.maxval));
    }
    img.samples.push_back(static_cast<std::uint16_t>(v));
  }
}

}  // namespace

Image read_pnm(const std::string& path) {
  Reader in(path);
  const Header h = read_header(in);
  Image img;
  img.width = static_cast<int>(h.width);
  img.height = static_cast<int>(h.height);
  img.channels = h.channels;
  img.maxval = static_cast<int>(h.maxval);
  if (h.binary) {
    read_binary(in, h, img);
  } else {
    read_ascii(in, h, img);
  }
  return img;
}

void validate(const Image& image, const std::string& what) {
  if (image.width < 1 || image.height < 1) {
    fail(what, "width and height must be at least 1 (got " + std::to_string(image.width) + " x " +
                   std::to_string(image.height) + ")");
  }
  if (image.channels != 1 && image.channels != 3) {
    fail(what, "channels must be 1 (gray) or 3 (RGB), got " + std::to_string(image.channels));
  }
  if (image.maxval < 1 || image.maxval > 65535) fail(what, "maxval must be 1..65535, got " + std::to_string(image.maxval));
  const std::uint64_t count = static_cast<std::uint64_t>(image.width) * static_cast<std::uint64_t>(image.height) *
                              static_cast<std::uint64_t>(image.channels);
  if (count > kMaxImageSamples) {
    fail(what, std::to_string(count) + " samples is more than the limit of " + std::to_string(kMaxImageSamples));
  }
  if (image.samples.size() != count) {
    fail(what, "holds " + std::to_string(image.samples.size()) + " samples; width x height x channels is " +
                   std::to_string(count));
  }
  for (std::size_t i = 0; i < image.samples.size(); ++i) {
    if (image.samples[i] > image.maxval) {
      fail(what, "sample value " + std::to_string(image.samples[i]) + " at " +
                     where_pixel(i, image.width, image.channels) + " is above maxval " + std::to_string(image.maxval));
    }
  }
}

void write_pnm(const std::string& path, const Image& image, bool binary) {
  validate(image, path);
  File f(std::fopen(path.c_str(), "wb"), &std::fclose);
  if (!f) fail(path, std::string("cannot open for writing: ") + std::strerror(errno));
  const int magic = image.channels == 1 ? (binary ? 5 : 2) : (binary ? 6 : 3);
  std::fprintf(f.get(), "P%d\n%d %d\n%d\n", magic, image.width, image.height, image.maxval);
  if (binary) {
    const bool wide = image.bytes_per_sample() == 2;
    std::vector<unsigned char> raw(image.samples.size() * (wide ? 2 : 1));
    for (std::size_t i = 0; i < image.samples.size(); ++i) {
      if (wide) {
        raw[2 * i] = static_cast<unsigned char>(image.samples[i] >> 8);  // big-endian, as Netpbm says
        raw[2 * i + 1] = static_cast<unsigned char>(image.samples[i] & 0xFF);
      } else {
        raw[i] = static_cast<unsigned char>(image.samples[i]);
      }
    }
    if (std::fwrite(raw.data(), 1, raw.size(), f.get()) != raw.size()) {
      fail(path, std::string("write error: ") + std::strerror(errno));
    }
  } else {
    // One image row per line, wrapped so that no line exceeds 70 characters.
    const std::size_t per_row = static_cast<std::size_t>(image.width) * static_cast<std::size_t>(image.channels);
    std::string line;
    for (std::size_t i = 0; i < image.samples.size(); ++i) {
      const std::string token = std::to_string(image.samples[i]);
      if (!line.empty() && line.size() + 1 + token.size() > 70) {
        line += '\n';
        std::fputs(line.c_str(), f.get());
        line.clear();
      }
      if (!line.empty()) line += ' ';
      line += token;
      if ((i + 1) % per_row == 0) {
        line += '\n';
        std::fputs(line.c_str(), f.get());
        line.clear();
      }
    }
  }
  if (std::ferror(f.get())) fail(path, std::string("write error: ") + std::strerror(errno));
  std::FILE* raw_file = f.release();
  if (std::fclose(raw_file) != 0) fail(path, std::string("write error on close: ") + std::strerror(errno));
}

std::vector<unsigned char> to_gray8(const Image& image, GrayFrom from) {
  validate(image, "to_gray8");
  const std::size_t n = image.pixels();
  const auto maxval = static_cast<std::uint32_t>(image.maxval);
  std::vector<unsigned char> gray(n);
  for (std::size_t i = 0; i < n; ++i) {
    std::uint32_t v = 0;
    if (image.channels == 1) {
      v = image.samples[i];
    } else if (from == GrayFrom::Red) {
      v = image.samples[3 * i];
    } else {
      const std::uint32_t r = image.samples[3 * i], g = image.samples[3 * i + 1], b = image.samples[3 * i + 2];
      v = (299 * r + 587 * g + 114 * b + 500) / 1000;  // ≤ 65535: the weights sum to 1000
    }
    gray[i] = static_cast<unsigned char>(maxval == 255 ? v : (v * 255 + maxval / 2) / maxval);
  }
  return gray;
}

Image gray8_image(int width, int height, const unsigned char* pixels) {
  if (width < 1 || height < 1) {
    throw ImageError("gray8_image: width and height must be at least 1 (got " + std::to_string(width) + " x " +
                     std::to_string(height) + ")");
  }
  Image img;
  img.width = width;
  img.height = height;
  img.channels = 1;
  img.maxval = 255;
  img.samples.assign(pixels, pixels + img.pixels());
  return img;
}

}  // namespace lab

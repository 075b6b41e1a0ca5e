// nocopy-mmap: the GPU reads a file through newBufferWithBytesNoCopy over its mmap, as llama.cpp loads weights by
// default. Sampled blocks are checksummed on the GPU and compared with the file read by pread (not through the
// mapping, so the reference does not share the path under test). A generated file then has its pages changed
// through another descriptor and is checked again: a device that serves stale pages shows it there. A user's file
// (--mmap-file) is only ever read, so it gets no such check, and its detail says so.
#include "doctor_probes.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <vector>

namespace mcs {
namespace {

constexpr uint64_t kBlockBytes = 4096;
constexpr uint32_t kBlockWords = kBlockBytes / 4;
constexpr uint32_t kMaxBlocks = 64;
constexpr uint32_t kFirstSeed = 0x6d6d6170u;
constexpr uint32_t kSecondSeed = 0x73746c65u;

uint32_t fileWord(uint32_t seed, uint64_t index) {
  uint32_t x = (static_cast<uint32_t>(index) * 0x9e3779b1u) ^ static_cast<uint32_t>(index >> 32) ^ seed;
  x ^= x >> 15;
  x *= 0x85ebca77u;
  x ^= x >> 13;
  x *= 0xc2b2ae3du;
  x ^= x >> 16;
  return x;
}

uint32_t fnv1a(const uint32_t *words, size_t count) {
  uint32_t hash = 2166136261u;
  for (size_t i = 0; i < count; i++) hash = (hash ^ words[i]) * 16777619u;
  return hash;
}

std::string systemError(const std::string &what) {
  return what + ": " + strerror(errno);
}

class FileDescriptor {
 public:
  explicit FileDescriptor(int fd = -1) : fd_(fd) {}
  ~FileDescriptor() {
    if (fd_ >= 0) close(fd_);
  }
  FileDescriptor(const FileDescriptor &) = delete;
  FileDescriptor &operator=(const FileDescriptor &) = delete;
  int get() const { return fd_; }
  void reset(int fd) {
    if (fd_ >= 0) close(fd_);
    fd_ = fd;
  }

 private:
  int fd_;
};

bool writeAll(int fd, const void *data, size_t length, off_t offset) {
  const char *p = static_cast<const char *>(data);
  while (length > 0) {
    ssize_t n = pwrite(fd, p, length, offset);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    p += n;
    length -= static_cast<size_t>(n);
    offset += n;
  }
  return true;
}

// Reads up to `length` bytes; what lies past the end of the file reads as zero, as it does through the mapping.
bool readAll(int fd, void *data, size_t length, off_t offset) {
  char *p = static_cast<char *>(data);
  memset(p, 0, length);
  while (length > 0) {
    ssize_t n = pread(fd, p, length, offset);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return false;
    if (n == 0) return true;
    p += n;
    length -= static_cast<size_t>(n);
    offset += n;
  }
  return true;
}

// Not under the probe's deadline: the deadline bounds the GPU's work, and a slow disk is not the device's fault.
bool generateFile(int fd, uint64_t size, std::string *error) {
  constexpr uint64_t kChunkWords = 1u << 20;
  std::vector<uint32_t> chunk(kChunkWords);
  for (uint64_t offset = 0; offset < size; offset += kChunkWords * 4) {
    uint64_t firstWord = offset / 4;
    for (uint64_t i = 0; i < kChunkWords; i++) chunk[i] = fileWord(kFirstSeed, firstWord + i);
    size_t bytes = static_cast<size_t>(std::min<uint64_t>(kChunkWords * 4, size - offset));
    if (!writeAll(fd, chunk.data(), bytes, static_cast<off_t>(offset))) {
      *error = systemError("writing the generated file failed");
      return false;
    }
  }
  return true;
}

// Reads the first `length` bytes of the file through its descriptor, so that its pages are in memory before the GPU's
// deadline starts: the first dispatch makes the whole NoCopy buffer resident, and a model not in the page cache would
// be read from disk inside the deadline, the disk's time judged as the GPU's. Through the descriptor, not the mapping:
// the GPU is still the first to read through the mapping.
bool pageIn(int fd, uint64_t length) {
  constexpr size_t kChunk = 1u << 20;
  std::vector<char> chunk(kChunk);
  for (uint64_t offset = 0; offset < length; offset += kChunk) {
    size_t bytes = static_cast<size_t>(std::min<uint64_t>(kChunk, length - offset));
    if (!readAll(fd, chunk.data(), bytes, static_cast<off_t>(offset))) return false;
  }
  return true;
}

// What the GPU and the file say for each sampled block.
struct Sample {
  std::vector<uint64_t> firstWord;
  std::vector<uint32_t> gpu;
  std::vector<uint32_t> file;
};

bool checksumFile(int fd, Sample *sample) {
  std::vector<uint32_t> block(kBlockWords);
  sample->file.assign(sample->firstWord.size(), 0);
  for (size_t i = 0; i < sample->firstWord.size(); i++) {
    if (!readAll(fd, block.data(), kBlockBytes, static_cast<off_t>(sample->firstWord[i] * 4))) return false;
    sample->file[i] = fnv1a(block.data(), kBlockWords);
  }
  return true;
}

uint32_t mismatches(const std::vector<uint32_t> &a, const std::vector<uint32_t> &b, size_t *first) {
  uint32_t count = 0;
  for (size_t i = 0; i < a.size(); i++) {
    if (a[i] != b[i] && count++ == 0) *first = i;
  }
  return count;
}

}  // namespace

ProbeOutcome runNocopyMmap(ProbeContext &ctx) {
  const DoctorProbe probe = DoctorProbe::NocopyMmap;
  const DoctorOptions &options = ctx.options;
  const bool generated = !options.mmapFile.has_value();
  if (generated && options.mmapSize < kBlockBytes) {
    return makeOutcome(probe, DoctorStatus::Skipped,
                       "no file to map: give a file, or a size of at least " + formatBytes(kBlockBytes));
  }
  const uint64_t page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));

  // A generated file is unlinked as soon as both descriptors are open, so nothing is left behind however the
  // process ends (Ctrl-C, a crash, SIGKILL); the mapping, the reads and the later change all go through them.
  std::string what;
  FileDescriptor writer, reader;
  if (generated) {
    std::string pattern = options.tempDir + "/metal-cap-shim-doctor-XXXXXX";
    std::vector<char> name(pattern.begin(), pattern.end());
    name.push_back('\0');
    // Close-on-exec from the start: a program started by another thread between create and fcntl would inherit it.
    writer.reset(mkostemp(name.data(), O_CLOEXEC));
    if (writer.get() < 0)
      return makeOutcome(probe, DoctorStatus::Error, systemError("cannot create a file in " + options.tempDir));
    reader.reset(open(name.data(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
    int openError = errno;
    unlink(name.data());
    what = "a generated " + formatBytes(options.mmapSize) + " file";
    errno = openError;
    if (reader.get() < 0)
      return makeOutcome(probe, DoctorStatus::Error, systemError("cannot open " + what + " read-only"));
    std::string error;
    if (!generateFile(writer.get(), options.mmapSize, &error)) return makeOutcome(probe, DoctorStatus::Error, error);
  } else {
    what = "'" + *options.mmapFile + "'";
    // Non-blocking: a FIFO swapped in after the TypeScript check would block a plain open for ever. The descriptor
    // is checked by fstat below, and blocking reads restored once it is known to be a regular file.
    reader.reset(open(options.mmapFile->c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC));
    if (reader.get() < 0)
      return makeOutcome(probe, DoctorStatus::Error, systemError("cannot open " + what + " read-only"));
  }
  struct stat info;
  if (fstat(reader.get(), &info) != 0)
    return makeOutcome(probe, DoctorStatus::Error, systemError("cannot stat " + what));
  uint64_t fileSize = static_cast<uint64_t>(info.st_size);
  if (!S_ISREG(info.st_mode) || fileSize == 0) {
    return makeOutcome(probe, DoctorStatus::Error, what + " is not a non-empty regular file");
  }
  const int flags = fcntl(reader.get(), F_GETFL);
  if (flags < 0 || fcntl(reader.get(), F_SETFL, flags & ~O_NONBLOCK) != 0)
    return makeOutcome(probe, DoctorStatus::Error, systemError("cannot set " + what + " to blocking reads"));
  // NoCopy wants a page-aligned pointer (mmap gives one) and a whole number of pages; the last page reads as zero
  // past the end of the file. One buffer can hold at most maxBufferLength bytes.
  uint64_t mapLength = (fileSize + page - 1) / page * page;
  uint64_t bufferLength = mapLength;
  if ([(id)ctx.device respondsToSelector:@selector(maxBufferLength)]) {
    bufferLength = std::min<uint64_t>(mapLength, [ctx.device maxBufferLength] / page * page);
  }
  if (bufferLength == 0)
    return makeOutcome(probe, DoctorStatus::Fail, "the device's maxBufferLength is below one page");
  // Like writing the generated file, paging in is not under the deadline: a slow disk is not the device's fault.
  if (!pageIn(reader.get(), bufferLength))
    return makeOutcome(probe, DoctorStatus::Error, systemError("reading " + what + " into memory failed"));
  ctx.deadline.restart();

  void *mapped = mmap(nullptr, mapLength, PROT_READ, MAP_SHARED, reader.get(), 0);
  if (mapped == MAP_FAILED) return makeOutcome(probe, DoctorStatus::Error, systemError("mmap of " + what + " failed"));
  // The buffer owns the mapping: Metal calls the deallocator once nothing uses the buffer, a command buffer still
  // pending after its deadline included. Unmapping under the GPU is the crash AdaptiveCpp PR 2067 describes. The whole
  // mapping goes, which can be longer than the buffer (maxBufferLength).
  const size_t unmapLength = static_cast<size_t>(mapLength);
  // Set by the deallocator: Metal documents no call of it when it returns nil, but one that called it then would
  // have the mapping unmapped twice (the second time, whatever was mapped there since).
  __block bool unmapped = false;
  Owned<id<MTLBuffer>> buffer([ctx.device newBufferWithBytesNoCopy:mapped
                                                            length:bufferLength
                                                           options:MTLResourceStorageModeShared
                                                       deallocator:^(void *pointer, NSUInteger) {
                                                         unmapped = true;
                                                         munmap(pointer, unmapLength);
                                                       }]);
  if (!buffer) {
    // No buffer took the deallocator, unless Metal called it already.
    if (!unmapped) munmap(mapped, unmapLength);
    return makeOutcome(probe, DoctorStatus::Fail,
                       "newBufferWithBytesNoCopy returned nil for " + formatBytes(bufferLength) + " of " + what);
  }
  uint64_t reported = [buffer.get() length];
  if (reported != bufferLength) {
    ProbeOutcome o = makeOutcome(probe, DoctorStatus::WrongResult,
                                 "the NoCopy buffer over " + what + " reports a length of " + formatBytes(reported) +
                                     " for " + formatBytes(bufferLength) +
                                     (reported == 0 ? " (reading it would crash, so it was not read)" : ""));
    o.bufferLength = reported;
    return o;
  }

  Pipeline pipeline;
  if (!buildPipeline(ctx, kBlockChecksumKernel, &pipeline)) {
    ProbeOutcome o = unbuilt(probe, pipeline);
    o.bufferLength = reported;
    return o;
  }
  Sample sample;
  uint32_t blocks = static_cast<uint32_t>(std::min<uint64_t>(kMaxBlocks, bufferLength / kBlockBytes));
  if (maxThreads(pipeline.state.get()) < kMaxBlocks) return tooFewThreads(probe, pipeline.state.get(), kMaxBlocks);
  for (uint32_t i = 0; i < blocks; i++) {
    uint64_t offset = blocks == 1 ? 0 : (bufferLength - kBlockBytes) * i / (blocks - 1) / kBlockBytes * kBlockBytes;
    sample.firstWord.push_back(offset / 4);
  }
  Owned<id<MTLBuffer>> offsets(newSharedBuffer(ctx.device, sample.firstWord.data(), blocks * sizeof(uint64_t)));
  Owned<id<MTLBuffer>> sums(newSharedBuffer(ctx.device, nullptr, kMaxBlocks * sizeof(uint32_t)));
  Owned<id<MTLBuffer>> wordsPerBlock(newSharedBuffer(ctx.device, &kBlockWords, sizeof(kBlockWords)));
  Owned<id<MTLBuffer>> blockCount(newSharedBuffer(ctx.device, &blocks, sizeof(blocks)));
  Owned<id<MTLCommandQueue>> queue([ctx.device newCommandQueue]);
  if (!offsets || !sums || !wordsPerBlock || !blockCount || !queue) {
    return makeOutcome(probe, DoctorStatus::Fail, "Metal gave no buffer or queue");
  }
  DispatchSpec spec;
  spec.pipeline = pipeline.state.get();
  spec.buffers = {buffer.get(), offsets.get(), sums.get(), wordsPerBlock.get(), blockCount.get()};
  spec.threadsPerThreadgroup = MTLSizeMake(kMaxBlocks, 1, 1);

  auto gpuRound = [&](std::vector<uint32_t> *out, ProbeOutcome *failure) {
    GpuFailure error;
    Completion done = dispatch(queue.get(), spec, ctx.deadline, &error);
    if (done != Completion::Completed) {
      *failure = incomplete(probe, done, error, ctx.deadline, "the checksum dispatch over the NoCopy buffer");
      failure->bufferLength = reported;
      return false;
    }
    const uint32_t *got = static_cast<const uint32_t *>([sums.get() contents]);
    out->assign(got, got + blocks);
    return true;
  };
  auto result = [&](DoctorStatus status, const std::string &detail) {
    ProbeOutcome o = makeOutcome(probe, status, detail);
    o.bufferLength = reported;
    return o;
  };
  std::string sampled =
      std::to_string(blocks) + " sampled blocks (" + formatBytes(kBlockBytes) + " each) of " + what +
      (bufferLength < mapLength ? " (its first " + formatBytes(bufferLength) + ": maxBufferLength)" : "");

  // The GPU reads first, before the CPU has touched the pages.
  ProbeOutcome failure;
  if (!gpuRound(&sample.gpu, &failure)) return failure;
  if (!checksumFile(reader.get(), &sample))
    return result(DoctorStatus::Error, systemError("reading " + what + " failed"));
  size_t first = 0;
  if (uint32_t wrong = mismatches(sample.gpu, sample.file, &first)) {
    return result(DoctorStatus::WrongResult, "the GPU read " + std::to_string(wrong) + " of " + sampled +
                                                 " differently from the file (first at byte " +
                                                 std::to_string(sample.firstWord[first] * 4) + ")");
  }
  // Stale pages show only when the file changes, and a user's file is never written: say what was not checked.
  if (!generated) {
    return result(DoctorStatus::Pass, "the GPU read all " + sampled +
                                          " through a NoCopy buffer over its mmap as the file holds them; page-change "
                                          "check skipped: " +
                                          what +
                                          " is opened read-only; run without --mmap-file "
                                          "to test stale pages");
  }

  // Change every sampled block through the other descriptor; the mapping and the GPU must see the new pages.
  std::vector<uint32_t> block(kBlockWords);
  for (uint64_t firstWord : sample.firstWord) {
    for (uint32_t i = 0; i < kBlockWords; i++) block[i] = fileWord(kSecondSeed, firstWord + i);
    if (!writeAll(writer.get(), block.data(), kBlockBytes, static_cast<off_t>(firstWord * 4))) {
      return result(DoctorStatus::Error, systemError("changing " + what + " failed"));
    }
  }
  std::vector<uint32_t> before = sample.gpu;
  if (!checksumFile(reader.get(), &sample))
    return result(DoctorStatus::Error, systemError("reading " + what + " failed"));
  if (sample.file == before)
    return result(DoctorStatus::Error, "the file did not show its own change; nothing to compare");
  if (!gpuRound(&sample.gpu, &failure)) return failure;
  if (uint32_t wrong = mismatches(sample.gpu, sample.file, &first)) {
    size_t unused = 0;
    uint32_t stale = blocks - mismatches(sample.gpu, before, &unused);
    return result(DoctorStatus::WrongResult, "stale data: after the file's pages changed, the GPU read " +
                                                 std::to_string(wrong) + " of " + sampled + " wrong, " +
                                                 std::to_string(stale) + " of them as they were before");
  }
  return result(DoctorStatus::Pass, "the GPU read all " + sampled +
                                        " through a NoCopy buffer over its mmap as the file holds them, also after "
                                        "the file's pages changed");
}

}  // namespace mcs

#include "ipset/sync_channel.h"

#include <errno.h>
#include <string.h>

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "ipset/constants.h"
#include "util/constants_object.h"
#include "util/js_error.h"

namespace podnet {

namespace {

struct SyncChannel {
  SlotPtr slot;
  Napi::Reference<Napi::Uint8Array> frame;  // keeps data alive while the function lives
  uint8_t* data;
};

[[noreturn]] void Malformed(Napi::Env env, const char* message) {
  ErrorInfo err = SystemError(EINVAL, "encode");
  err.message = message;
  ThrowError(env, err);
}

Napi::Value Run(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  auto* channel = static_cast<SyncChannel*>(info.Data());
  ipset::Session* session = channel->slot->session.get();
  // Only a JS peer runs JS inside the call, and so can close the handle under
  // it: only then is the session held (a socket's call skips the atomic
  // reference count, twice per add).
  std::shared_ptr<ipset::Session> held;
  if (session == nullptr || session->engine().transport().NeedsJsThread()) {
    held = LiveSession(env, *channel->slot);
    session = held.get();
  }
  // The request is copied out before anything runs: a JS peer's exchange()
  // may re-enter with a sync call of its own, which rewrites the frame.
  uint8_t request[sync_frame::kBytes];
  memcpy(request, channel->data, sizeof request);
  size_t nameLen = request[sync_frame::kNameLength];
  if (nameLen == 0 || nameLen > ipset::kMaxNameLen) Malformed(env, "set name is not 1 to 31 bytes");
  const uint8_t* record = request + sync_frame::kRecord;
  uint16_t recordLen;  // host order, as every record field
  memcpy(&recordLen, record, sizeof recordLen);
  // One whole record: with none, Adt would send nothing and report success.
  if (recordLen < ipset::kRecordHeader) Malformed(env, "sync frame holds no record");
  if (recordLen > sync_frame::kBytes - sync_frame::kRecord) Malformed(env, "record length past the end of its frame");
  uint8_t cmd = request[sync_frame::kCommand];
  if (cmd != ipset::IPSET_CMD_ADD && cmd != ipset::IPSET_CMD_DEL) Malformed(env, "sync command is not ADD or DEL");
  bool excl = (request[sync_frame::kFlags] & sync_frame::kExcl) != 0;

  uint32_t applied = 0;
  std::vector<ipset::EntryFailure> failures;
  ErrorInfo err;
  {
    std::unique_lock<std::mutex> lock;
    err = session->Lock(&lock);
    if (!err.failed()) {
      std::string name(reinterpret_cast<const char*>(request + sync_frame::kName), nameLen);
      err = session->Adt(cmd, name, record, recordLen, excl, &applied, &failures);
    }
  }
  if (err.failed()) ThrowError(env, err);
  int32_t result = failures.empty() ? 0 : failures.front().error;
  memcpy(channel->data + sync_frame::kResult, &result, sizeof result);
  return Napi::Value();
}

}  // namespace

Napi::Function NewSyncChannel(Napi::Env env, const SlotPtr& slot, Napi::Uint8Array frame) {
  if (frame.ByteLength() < sync_frame::kBytes) Malformed(env, "sync frame is smaller than ipsetSyncFrame.bytes");
  auto channel = std::make_unique<SyncChannel>(SyncChannel{slot, Napi::Persistent(frame), frame.Data()});
  Napi::Function fn = Napi::Function::New<Run>(env, "ipsetSync", channel.get());
  fn.AddFinalizer([](Napi::Env, SyncChannel* c) { delete c; }, channel.get());
  channel.release();  // the finalizer owns it now
  return fn;
}

void ExportSyncFrame(Napi::Env env, Napi::Object exports) {
  using namespace sync_frame;
  exports.Set("ipsetSyncFrame",
              ConstantsObject(env, {{"result", kResult}, {"command", kCommand}, {"flags", kFlags},
                                    {"nameLength", kNameLength}, {"name", kName}, {"record", kRecord},
                                    {"bytes", kBytes}, {"excl", kExcl}}));
}

}  // namespace podnet

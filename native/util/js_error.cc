#include "util/js_error.h"

#include <string.h>

#include <cctype>
#include <string>

namespace podnet {

static std::string Describe(int err) {
  char buf[256];
  // GNU strerror_r returns the string it chose (maybe not buf).
  std::string text = strerror_r(err, buf, sizeof buf);
  if (!text.empty()) text[0] = static_cast<char>(std::tolower(static_cast<unsigned char>(text[0])));
  return text;
}

static std::string DeriveMessage(const ErrorInfo& info, const std::string& code) {
  // Node's shape: "ENOENT: no such file or directory, open '/x'"
  std::string msg = code + ": " + (info.err != 0 ? Describe(info.err) : std::string("error"));
  if (!info.syscall.empty()) msg += ", " + info.syscall;
  for (const auto& field : info.fields) {
    if (field.first == "path") msg += " '" + field.second + "'";
  }
  for (const auto& field : info.fields) {
    if (field.first == "set") msg += " (set '" + field.second + "')";
  }
  return msg;
}

Napi::Value MakeError(Napi::Env env, const ErrorInfo& info) {
  std::string code = info.code.empty() ? ErrnoName(info.err) : info.code;
  std::string message = info.message.empty() ? DeriveMessage(info, code) : info.message;

  Napi::Object props = Napi::Object::New(env);
  props.Set("kind", info.kind);
  props.Set("message", message);
  props.Set("code", code);
  if (info.err != 0) props.Set("errno", -info.err);
  if (!info.syscall.empty()) props.Set("syscall", info.syscall);
  for (const auto& field : info.fields) props.Set(field.first, field.second);

  AddonData* data = env.GetInstanceData<AddonData>();
  if (data != nullptr && !data->errorFactory.IsEmpty()) {
    return data->errorFactory.Call({props});
  }
  // Before lib/native.ts installed the factory: a plain Error with the same fields.
  Napi::Error error = Napi::Error::New(env, message);
  Napi::Object obj = error.Value();
  Napi::Array keys = props.GetPropertyNames();
  for (uint32_t i = 0; i < keys.Length(); i++) {
    Napi::Value key = keys.Get(i);
    if (key.As<Napi::String>().Utf8Value() != "message") obj.Set(key, props.Get(key));
  }
  return obj;
}

void ThrowError(Napi::Env env, const ErrorInfo& info) {
  throw Napi::Error(env, MakeError(env, info));
}

}  // namespace podnet

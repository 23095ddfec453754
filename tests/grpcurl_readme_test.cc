// The grpcurl page (docs/grpcurl.md, moved there from the README) must work against a real
// coordinator, as grpcurl would use it: through server reflection only. The services it lists are
// exactly those reflection lists, every `describe` names a symbol reflection resolves, and every
// `-d` body parses as the JSON of its method's request type (with the descriptors reflection
// served, as grpcurl does).
#include <fstream>
#include <memory>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/descriptor.pb.h"
#include "google/protobuf/descriptor_database.h"
#include "google/protobuf/dynamic_message.h"
#include "google/protobuf/util/json_util.h"
#include "grpc/reflection/v1alpha/reflection.grpc.pb.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "tests/process_util.h"
#include "tests/test_util.h"

namespace {

namespace refl = ::grpc::reflection::v1alpha;
using ::testing_util::CoordinatorProcess;
using ::testing_util::TempDir;

// The whole of docs/grpcurl.md, a page that starts with its title "# grpcurl"; empty when the
// page is missing or has another title.
std::string GrpcurlSection() {
  std::ifstream in(std::string(COORD_SOURCE_DIR) + "/docs/grpcurl.md");
  std::stringstream text;
  text << in.rdbuf();
  const std::string page = text.str();
  if (page.rfind("# grpcurl\n", 0) != 0) return "";
  return page;
}

// One reflection exchange.
class Reflection {
 public:
  explicit Reflection(const std::string& target)
      : stub_(refl::ServerReflection::NewStub(
            grpc::CreateChannel(target, grpc::InsecureChannelCredentials()))) {
    context_.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(60));
    stream_ = stub_->ServerReflectionInfo(&context_);
  }
  ~Reflection() {
    stream_->WritesDone();
    (void)stream_->Finish();
  }

  refl::ServerReflectionResponse Ask(const refl::ServerReflectionRequest& request) {
    refl::ServerReflectionResponse response;
    EXPECT_TRUE(stream_->Write(request));
    EXPECT_TRUE(stream_->Read(&response));
    return response;
  }

  std::set<std::string> Services() {
    refl::ServerReflectionRequest request;
    request.set_list_services("");
    std::set<std::string> names;
    const refl::ServerReflectionResponse response = Ask(request);
    for (const auto& s : response.list_services_response().service()) names.insert(s.name());
    return names;
  }

  // Adds the files that define `symbol` (and their dependencies) to `db`; false when the server
  // does not know the symbol.
  bool Load(const std::string& symbol, google::protobuf::SimpleDescriptorDatabase* db) {
    refl::ServerReflectionRequest request;
    request.set_file_containing_symbol(symbol);
    refl::ServerReflectionResponse response = Ask(request);
    if (response.has_error_response()) return false;
    for (const std::string& bytes : response.file_descriptor_response().file_descriptor_proto()) {
      google::protobuf::FileDescriptorProto file;
      EXPECT_TRUE(file.ParseFromString(bytes));
      google::protobuf::FileDescriptorProto existing;
      if (!db->FindFileByName(file.name(), &existing)) db->Add(file);
    }
    return true;
  }

 private:
  std::unique_ptr<refl::ServerReflection::Stub> stub_;
  grpc::ClientContext context_;
  std::unique_ptr<
      grpc::ClientReaderWriter<refl::ServerReflectionRequest, refl::ServerReflectionResponse>>
      stream_;
};

class GrpcurlReadmeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    section_ = GrpcurlSection();
    ASSERT_FALSE(section_.empty())
        << "docs/grpcurl.md is missing or does not start with \"# grpcurl\"";
    absl::StatusOr<std::unique_ptr<CoordinatorProcess>> c =
        CoordinatorProcess::Start(dir_.Sub("data"));
    ASSERT_OK(c);
    coordinator_ = *std::move(c);
  }

  TempDir dir_;
  std::string section_;
  std::unique_ptr<CoordinatorProcess> coordinator_;
};

TEST_F(GrpcurlReadmeTest, ListedServicesAreExactlyTheServedOnes) {
  // The service list is the code block of lines that are each one full service name.
  std::set<std::string> documented;
  const std::regex service_line(R"(^([a-z][a-z0-9_]*\.)+[A-Z][A-Za-z0-9]*$)");
  for (absl::string_view line : absl::StrSplit(section_, '\n')) {
    const std::string l(line);
    if (std::regex_match(l, service_line)) documented.insert(l);
  }
  ASSERT_GE(documented.size(), 8u) << section_;
  Reflection reflection(coordinator_->target());
  EXPECT_EQ(documented, reflection.Services())
      << "docs/grpcurl.md lists: " << absl::StrJoin(documented, " ");
  // The list command itself is there, with the coordinator's default address.
  EXPECT_NE(section_.find("grpcurl -plaintext 127.0.0.1:50051 list"), std::string::npos);
}

TEST_F(GrpcurlReadmeTest, DescribedSymbolsResolveAndCallBodiesParse) {
  Reflection reflection(coordinator_->target());
  const std::string flat = std::regex_replace(section_, std::regex(R"(\\\n\s*)"), "");
  int described = 0;
  const std::regex describe(R"(grpcurl -plaintext 127\.0\.0\.1:50051 describe ([\w.]+))");
  for (std::sregex_iterator it(flat.begin(), flat.end(), describe), end; it != end; ++it) {
    google::protobuf::SimpleDescriptorDatabase db;
    EXPECT_TRUE(reflection.Load((*it)[1], &db)) << (*it)[1];
    ++described;
  }
  EXPECT_GE(described, 1);

  int calls = 0;
  const std::regex call(R"(grpcurl -plaintext -d '(\{[^']*\})' 127\.0\.0\.1:50051 ([\w.]+)/(\w+))");
  for (std::sregex_iterator it(flat.begin(), flat.end(), call), end; it != end; ++it) {
    const std::string body = (*it)[1];
    const std::string service = (*it)[2];
    const std::string method = (*it)[3];
    google::protobuf::SimpleDescriptorDatabase db;
    ASSERT_TRUE(reflection.Load(service, &db)) << service;
    google::protobuf::DescriptorPool pool(&db);
    const google::protobuf::ServiceDescriptor* s = pool.FindServiceByName(service);
    ASSERT_NE(s, nullptr) << service;
    const google::protobuf::MethodDescriptor* m = s->FindMethodByName(method);
    ASSERT_NE(m, nullptr) << service << "/" << method;
    google::protobuf::DynamicMessageFactory factory(&pool);
    std::unique_ptr<google::protobuf::Message> request(
        factory.GetPrototype(m->input_type())->New());
    const auto parsed = google::protobuf::util::JsonStringToMessage(body, request.get());
    EXPECT_TRUE(parsed.ok()) << service << "/" << method << ": " << parsed.ToString();
    ++calls;
  }
  EXPECT_GE(calls, 3);
  // A wrong field name would be caught: the check is not vacuous.
  google::protobuf::SimpleDescriptorDatabase db;
  ASSERT_TRUE(reflection.Load("coordinator.v1.ContextService", &db));
  google::protobuf::DescriptorPool pool(&db);
  google::protobuf::DynamicMessageFactory factory(&pool);
  std::unique_ptr<google::protobuf::Message> request(
      factory.GetPrototype(pool.FindMessageTypeByName("coordinator.v1.GetContextRequest"))->New());
  EXPECT_FALSE(
      google::protobuf::util::JsonStringToMessage(R"({"contextid": "x"})", request.get()).ok());
}

}  // namespace

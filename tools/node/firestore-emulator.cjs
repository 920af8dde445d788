// Starts the npm Firestore emulator (@firestore-emulator/server) on 127.0.0.1 only.
//
// Usage: node firestore-emulator.cjs [PORT]   (PORT 0 or absent: the kernel picks one)
// Prints one line when it listens: "firestore-emulator listening on 127.0.0.1:PORT".
// Stops on SIGTERM/SIGINT (gatebench.local.procs also has the kernel kill it if its parent dies).
//
// FirestoreServer.start() binds 0.0.0.0; the tests must not open a port to the network, so
// this script binds the package's own gRPC server to the loopback address itself.
"use strict";

const { FirestoreServer } = require("@firestore-emulator/server");
const { ServerCredentials } = require("@grpc/grpc-js");

const port = Number.parseInt(process.argv[2] || "0", 10);
if (!Number.isInteger(port) || port < 0 || port > 65535) {
  console.error(`firestore-emulator: expected a port number, got ${process.argv[2]}`);
  process.exit(2);
}

const emulator = new FirestoreServer();
// `server` is the grpc-js Server the package created and registered the Firestore service on.
const grpcServer = emulator.server;
if (!grpcServer || typeof grpcServer.bindAsync !== "function") {
  console.error("firestore-emulator: this @firestore-emulator/server version has no gRPC server field");
  process.exit(1);
}

grpcServer.bindAsync(`127.0.0.1:${port}`, ServerCredentials.createInsecure(), (err, bound) => {
  if (err) {
    console.error(`firestore-emulator: cannot listen on 127.0.0.1:${port}: ${err.message}`);
    process.exit(1);
  }
  console.log(`firestore-emulator listening on 127.0.0.1:${bound}`);
});

function stop() {
  emulator.stop();
  process.exit(0);
}
process.on("SIGTERM", stop);
process.on("SIGINT", stop);

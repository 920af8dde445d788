package gatebench;

import static io.gatling.javaapi.core.CoreDsl.*;
import static io.gatling.javaapi.http.HttpDsl.*;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.gatling.javaapi.core.ChainBuilder;
import io.gatling.javaapi.core.OpenInjectionStep;
import io.gatling.javaapi.core.PopulationBuilder;
import io.gatling.javaapi.core.ScenarioBuilder;
import io.gatling.javaapi.core.Session;
import io.gatling.javaapi.core.Simulation;
import io.gatling.javaapi.http.HttpProtocolBuilder;
import io.gatling.javaapi.http.HttpRequestActionBuilder;
import java.io.File;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Base64;
import java.util.Collections;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.Function;

/**
 * The only simulation gatebench runs. It reads the workload JSON named by the system property
 * {@code gatebench.workload} (rendered by gatebench.core.workload from the benchmark plan) and runs
 * its phases one after the other.
 *
 * <p>Phases follow each other without Gatling's scenario chaining where possible: chaining
 * ({@code andThen}) starts the next scenario on the injector's next one-second tick, which would
 * cost up to a second per phase. Consecutive phases with a fixed number of users (at_once,
 * sequential, concurrent) share one scenario of W users (W = the largest user count among them),
 * separated by rendez-vous points: all W users meet, the first user runs the control step (flush
 * marker, backend reset, start marker), all meet again, then the phase's users send its
 * requests while the others go straight to the next rendez-vous. Open-model phases (ramp,
 * constant_rate) need Gatling's own injection, so each is a scenario of its own, chained.
 *
 * <p>Request records are named after their phase id ("p0007"), so the Python side splits the
 * binary simulation.log by phase. Control requests are named "__control__". At each control step
 * the first user closes a group whose name is about 8 KB long: writing that record makes Gatling's
 * log writer flush its 8 KB buffer, so every earlier phase is on disk (and can be stored) while
 * later phases run. Its name, "__flush__N", proves that phases before N are complete.
 *
 * <p>Secrets: auth values are read from environment variables once, here, and only ever sent
 * as headers; they are never written to a file or printed. An auth header marked {@code
 * per_user} names a variable that holds the path of a file of tokens, one a line (the run's pool
 * of subjects): user i of a phase sends line (user_base + i * user_stride) mod lines, so each
 * simulated user carries its own subject (a per-subject rate limit counts per user).
 *
 * <p>Answers: in a phase with {@code answers} (measured, against gatebench's own backend), every
 * request names itself ({@code X-Gatebench-Request}) and every answer is checked against the
 * backend's signature ({@link Answers}); a wrong answer is a KO whose message begins "wrong
 * answer (KIND)", which gatebench.core.answers counts apart from the errors.
 *
 * <p>TLS: with a {@code tls} object in the workload, HTTP/2 is enabled when {@code tls.http2}
 * is true; the trust store comes from system properties set by gatebench.local.engines.gatling.
 *
 * <p>stdout protocol (one line each, read by gatebench.local.engines.gatling): {@code GATEBENCH start
 * INDEX EPOCH_MS}, {@code GATEBENCH end INDEX EPOCH_MS}, {@code GATEBENCH progress INDEX DONE}
 * (every second) and {@code GATEBENCH finished EPOCH_MS}.
 */
public class GenericSimulation extends Simulation {

  private static final ObjectMapper JSON = new ObjectMapper();
  private static final String CONTROL = "__control__";
  private static final String CONTROL_RETRY = "__control_retry__";
  private static final String CACHE_EMPTY_MESSAGE = "__control_first__";
  private static final int FLUSH_NAME_LENGTH = 8000;

  private final List<LongAdder> done = new ArrayList<>();
  private final Map<String, String> secrets = new HashMap<>();
  private final Map<String, String[]> userTokens = new HashMap<>();
  private volatile Set<String> skipped = Collections.emptySet();
  private volatile int current = -1;
  private int phaseCount;
  private String firstBaseUrl = "";

  public GenericSimulation() throws IOException {
    String path = System.getProperty("gatebench.workload");
    if (path == null || path.isEmpty()) {
      throw new IllegalArgumentException("set -Dgatebench.workload=FILE (the workload JSON)");
    }
    JsonNode root = JSON.readTree(new File(path));
    if (!"gatebench-workload/1".equals(root.path("format").asText())) {
      throw new IllegalArgumentException(path + ": not a gatebench-workload/1 file");
    }
    for (JsonNode name : root.path("secret_env")) {
      String value = System.getenv(name.asText());
      if (value == null || value.isEmpty()) {
        throw new IllegalArgumentException(
            "environment variable " + name.asText() + " is not set (the plan's auth needs it)");
      }
      secrets.put(name.asText(), value);
    }
    readUserTokens(root.path("phases"));
    String skipFile = root.path("skip_file").asText("");
    if (!skipFile.isEmpty()) {
      watchSkipFile(Path.of(skipFile));
    }

    HttpProtocolBuilder protocol =
        http.disableWarmUp()
            .disableCaching()
            .disableFollowRedirect()
            .disableAutoReferer()
            .disableAutoOrigin()
            .disableUrlEncoding()
            .userAgentHeader("gatebench");
    // TLS (the trust store is set by system properties, gatebench.local.engines.gatling): HTTP/2 by
    // ALPN where the plan asks for it; otherwise HTTP/1.1 only.
    if (root.path("tls").path("http2").asBoolean(false)) {
      protocol = protocol.enableHttp2();
    }

    JsonNode phases = root.path("phases");
    phaseCount = phases.size();
    if (phaseCount > 0) {
      firstBaseUrl = phases.get(0).path("request").path("base_url").asText("");
    }
    for (int i = 0; i < phaseCount; i++) {
      done.add(new LongAdder());
    }
    // Segments: runs of consecutive fixed-user phases, and single open-model phases.
    List<PopulationBuilder> chain = new ArrayList<>();
    int i = 0;
    if (phaseCount > 0 && isOpen(phases.get(0))) {
      chain.add(controlScenario("c0", 0, phases.get(0).path("before")));
    }
    while (i < phaseCount) {
      if (isOpen(phases.get(i))) {
        JsonNode next = i + 1 < phaseCount ? phases.get(i + 1) : null;
        chain.add(openScenario(i, phases.get(i)));
        if (next != null && isOpen(next)) {
          chain.add(controlScenario("c" + (i + 1), i + 1, next.path("before")));
        }
        i++;
      } else {
        int j = i;
        while (j < phaseCount && !isOpen(phases.get(j))) {
          j++;
        }
        chain.add(closedSegment(phases, i, j));
        i = j;
      }
    }
    if (phaseCount == 0 || isOpen(phases.get(phaseCount - 1))) {
      chain.add(controlScenario("c" + phaseCount, phaseCount, JSON.createArrayNode()));
    }
    PopulationBuilder first = chain.get(chain.size() - 1);
    for (int k = chain.size() - 2; k >= 0; k--) {
      first = chain.get(k).andThen(first);
    }
    waitForGo(root.path("go_file").asText(""));
    startProgressPrinter();
    setUp(first).protocols(protocol);
  }

  /** The token files of the per-user auth headers, read once (their content is never printed). */
  private void readUserTokens(JsonNode phases) throws IOException {
    for (JsonNode phase : phases) {
      for (JsonNode header : phase.path("request").path("auth")) {
        String env = header.path("env").asText();
        if (!header.path("per_user").asBoolean(false) || userTokens.containsKey(env)) {
          continue;
        }
        List<String> lines = new ArrayList<>();
        for (String line : Files.readAllLines(Path.of(secrets.get(env)), StandardCharsets.US_ASCII)) {
          if (!line.isEmpty()) {
            lines.add(line);
          }
        }
        if (lines.isEmpty()) {
          throw new IllegalArgumentException("the token file named by " + env + " is empty");
        }
        userTokens.put(env, lines.toArray(new String[0]));
      }
    }
  }

  /** The token of simulated user {@code user} (gatebench.core.tokens.subject_of_user: same rule). */
  static String userToken(String[] tokens, long base, long stride, long user) {
    return tokens[(int) Math.floorMod(base + user * stride, (long) tokens.length)];
  }

  /**
   * The JVM and Gatling take seconds to start; gatebench starts this simulation while the
   * gateways boot and creates the go file once they answer. Everything costly is built before.
   */
  private static void waitForGo(String goFile) throws IOException {
    if (goFile.isEmpty()) {
      return;
    }
    Path go = Path.of(goFile);
    long deadline = System.nanoTime() + 30L * 60 * 1_000_000_000L;
    while (!Files.exists(go)) {
      if (System.nanoTime() > deadline) {
        throw new IOException("no go file " + goFile + " after 30 minutes");
      }
      try {
        Thread.sleep(10);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new IOException("interrupted while waiting for " + goFile);
      }
    }
  }

  private static boolean isOpen(JsonNode phase) {
    String kind = phase.path("injection").path("kind").asText();
    return kind.equals("ramp") || kind.equals("constant_rate") || kind.equals("arrivals");
  }

  private static int usersOf(JsonNode phase) {
    JsonNode injection = phase.path("injection");
    return injection.path("kind").asText().equals("sequential")
        ? 1
        : Math.max(1, injection.path("users").asInt(1));
  }

  // -- control steps between phases ----------------------------------------------------------

  /**
   * What runs before phase {@code index} (or after the last one when index == phase count):
   * the end marker of the previous phase, the flush group, the backend calls, the start marker.
   * When the next phase is open-model, its start marker comes from its first user instead.
   */
  private ChainBuilder control(int index, JsonNode before, boolean startMarker) {
    String flushName = "__flush__" + index + "_" + "x".repeat(FLUSH_NAME_LENGTH);
    ChainBuilder steps =
        exec(
            session -> {
              if (index > 0) {
                marker("end " + (index - 1) + " " + System.currentTimeMillis());
              }
              return session;
            });
    steps = steps.group(session -> flushName).on(exec(session -> session));
    if (index == 0 && !firstBaseUrl.isEmpty()) {
      // Gatling 3.15.1 writes the empty string (the message of every OK response) without
      // checking its buffer's capacity, the first time it caches it: if that first OK lands
      // with 4-7 bytes left in the 8 KB buffer, the writer throws BufferOverflowException.
      // One recorded request right after a flush record caches "" at a safe point; any HTTP
      // status counts as OK for it. The first flush record may still fit behind the run
      // record (then the buffer is not flushed and the request may land in that window,
      // depending on the run record's size): a second one never fits behind the first, so
      // the request always follows a flush.
      steps = steps.group(session -> flushName).on(exec(session -> session));
      steps =
          steps.exec(
              http(CACHE_EMPTY_MESSAGE)
                  .get(firstBaseUrl + "/")
                  .check(status().saveAs("gb.first.status")));
    }
    for (JsonNode call : before) {
      String method = call.path("method").asText("POST");
      String url = call.path("url").asText();
      int expect = call.path("status").asInt(204);
      int waitMs = call.path("wait_ms").asInt(0);
      if (waitMs > 0) {
        // A backend that may be restarting (a replica after a fault): retry every 100 ms until
        // it answers, recorded under a name of its own; the call that counts follows.
        steps =
            steps
                .tryMax(Math.max(1, waitMs / 100), "gb.try")
                .on(
                    doIf(session -> session.getInt("gb.try") > 0)
                        .then(pause(Duration.ofMillis(100)))
                        .exec(
                            http(CONTROL_RETRY)
                                .httpRequest(session -> method, session -> url)
                                .check(status().is(expect))))
                .exec(session -> session.markAsSucceeded());
      }
      steps =
          steps.exec(
              http(CONTROL)
                  .httpRequest(session -> method, session -> url)
                  .check(status().is(expect)));
    }
    if (startMarker || index >= phaseCount) {
      steps =
          steps.exec(
              session -> {
                startMarker(index);
                return session;
              });
    }
    return steps;
  }

  private void startMarker(int index) {
    current = index;
    marker(
        (index < phaseCount ? "start " + index + " " : "finished ") + System.currentTimeMillis());
  }

  private PopulationBuilder controlScenario(String name, int index, JsonNode before) {
    return scenario(name).exec(control(index, before, false)).injectOpen(atOnceUsers(1));
  }

  private PopulationBuilder closedSegment(JsonNode phases, int from, int to) {
    int width = 1;
    for (int i = from; i < to; i++) {
      width = Math.max(width, usersOf(phases.get(i)));
    }
    final int users = width;
    AtomicLong ids = new AtomicLong();
    ChainBuilder steps =
        exec(session -> session.set("gb.user", ids.getAndIncrement()));
    for (int i = from; i < to; i++) {
      JsonNode phase = phases.get(i);
      int phaseUsers = usersOf(phase);
      String target = phase.path("target").asText();
      steps =
          steps
              .rendezVous(users)
              .doIf(session -> session.getLong("gb.user") == 0)
              .then(control(i, phase.path("before"), true))
              .rendezVous(users)
              .doIf(
                  session ->
                      session.getLong("gb.user") < phaseUsers && !skipped.contains(target))
              .then(closedPhase(i, phase));
    }
    JsonNode next = to < phases.size() ? phases.get(to) : null;
    steps =
        steps
            .rendezVous(users)
            .doIf(session -> session.getLong("gb.user") == 0)
            .then(
                control(
                    to, next == null ? JSON.createArrayNode() : next.path("before"), false));
    return scenario("s" + from).exec(steps).injectOpen(atOnceUsers(users));
  }

  private static void marker(String text) {
    System.out.println("GATEBENCH " + text);
    System.out.flush();
  }

  private void startProgressPrinter() {
    Thread printer =
        new Thread(
            () -> {
              while (true) {
                try {
                  Thread.sleep(1000);
                } catch (InterruptedException e) {
                  return;
                }
                int index = current;
                if (index >= 0 && index < done.size()) {
                  marker("progress " + index + " " + done.get(index).sum());
                }
              }
            },
            "gatebench-progress");
    printer.setDaemon(true);
    printer.start();
  }

  private void watchSkipFile(Path file) {
    Thread watcher =
        new Thread(
            () -> {
              long seen = -1;
              while (true) {
                try {
                  Thread.sleep(200);
                  if (Files.exists(file)) {
                    long modified = Files.getLastModifiedTime(file).toMillis() ^ Files.size(file);
                    if (modified != seen) {
                      seen = modified;
                      Set<String> names = new HashSet<>();
                      for (String line : Files.readAllLines(file, StandardCharsets.UTF_8)) {
                        if (!line.isBlank()) {
                          names.add(line.strip());
                        }
                      }
                      skipped = names;
                    }
                  }
                } catch (InterruptedException e) {
                  return;
                } catch (IOException e) {
                  // the file is being replaced; read it next time
                }
              }
            },
            "gatebench-skip-watcher");
    watcher.setDaemon(true);
    watcher.start();
  }

  // -- one phase ------------------------------------------------------------------------------

  private ChainBuilder oneRequest(int index, JsonNode phase) {
    Iterator<Map<String, Object>> feeder =
        new Values(phase.path("params"), phase.path("seed").asLong(index));
    LongAdder counter = done.get(index);
    return feed(feeder)
        .exec(
            request(
                phase.path("id").asText(),
                phase.path("request"),
                phase.path("answers"),
                phase.path("user_base").asLong(0),
                phase.path("user_stride").asLong(1)))
        .exec(
            session -> {
              counter.increment();
              return session;
            });
  }

  /** The requests of one user of a fixed-user phase (at_once, sequential, concurrent). */
  private ChainBuilder closedPhase(int index, JsonNode phase) {
    JsonNode injection = phase.path("injection");
    String kind = injection.path("kind").asText();
    String target = phase.path("target").asText();
    ChainBuilder one = oneRequest(index, phase);
    switch (kind) {
      case "at_once":
        return one;
      case "sequential":
        return repeat(injection.path("requests").asInt()).on(one);
      case "concurrent":
        {
          long budget = injection.path("requests").asLong(Long.MAX_VALUE);
          long durationMs = injection.path("duration_ms").asLong(Long.MAX_VALUE);
          AtomicLong remaining = new AtomicLong(budget);
          AtomicLong deadline = new AtomicLong(Long.MIN_VALUE);
          return exec(session -> {
                long end =
                    durationMs == Long.MAX_VALUE
                        ? Long.MAX_VALUE
                        : System.nanoTime() + durationMs * 1_000_000L;
                deadline.compareAndSet(Long.MIN_VALUE, end);
                return session;
              })
              .asLongAs(
                  session ->
                      !skipped.contains(target)
                          && System.nanoTime() < deadline.get()
                          && remaining.getAndDecrement() > 0)
              .on(one);
        }
      default:
        throw new IllegalArgumentException(phase.path("id").asText() + ": unknown kind " + kind);
    }
  }

  private PopulationBuilder openScenario(int index, JsonNode phase) {
    String target = phase.path("target").asText();
    java.util.concurrent.atomic.AtomicBoolean started =
        new java.util.concurrent.atomic.AtomicBoolean();
    AtomicLong ids = new AtomicLong();
    ChainBuilder steps =
        exec(
                session -> {
                  if (started.compareAndSet(false, true)) {
                    startMarker(index);
                  }
                  return session.set("gb.user", ids.getAndIncrement());
                })
            .doIf(session -> !skipped.contains(target))
            .then(oneRequest(index, phase));
    return scenario(phase.path("id").asText())
        .exec(steps)
        .injectOpen(injection(phase.path("injection")));
  }

  /**
   * Gatling's ramp and constant-rate steps work in whole seconds (a 500 ms ramp injects nobody,
   * 2.5 s at 100/s injects 200 users over 2 s), so a duration that is not a whole number of
   * seconds gets an explicit arrival schedule instead: user k of n arrives at k × d / n,
   * users arriving in the same millisecond start together.
   */
  private static OpenInjectionStep[] injection(JsonNode injection) {
    String kind = injection.path("kind").asText();
    long durationMs = injection.path("duration_ms").asLong();
    switch (kind) {
      case "at_once":
        return new OpenInjectionStep[] {atOnceUsers(injection.path("users").asInt())};
      case "ramp":
        {
          int users = injection.path("users").asInt();
          return durationMs % 1000 == 0
              ? new OpenInjectionStep[] {rampUsers(users).during(Duration.ofMillis(durationMs))}
              : arrivals(users, durationMs);
        }
      case "constant_rate":
        {
          double rate = injection.path("rate").asDouble();
          return durationMs % 1000 == 0
              ? new OpenInjectionStep[] {
                constantUsersPerSec(rate).during(Duration.ofMillis(durationMs))
              }
              : arrivals(Math.round(rate * durationMs / 1000.0), durationMs);
        }
      case "arrivals":
        return recorded(injection);
      default:
        throw new IllegalArgumentException("unknown injection kind " + kind);
    }
  }

  /**
   * A recorded arrival curve: counts[i] users arrive during step i, evenly spaced (user k of n
   * at k × step / n from the step's start). A step of whole seconds is Gatling's own constant
   * rate over it (which spaces its users the same way); any other step gets the explicit
   * schedule of {@link #arrivals}, so a compressed curve keeps its shape to the millisecond.
   */
  private static OpenInjectionStep[] recorded(JsonNode injection) {
    long stepUs = injection.path("step_us").asLong(1_000_000L);
    JsonNode counts = injection.path("counts");
    List<OpenInjectionStep> steps = new ArrayList<>();
    if (stepUs % 1_000_000L == 0) {
      Duration step = Duration.ofSeconds(stepUs / 1_000_000L);
      for (JsonNode count : counts) {
        long n = count.asLong();
        steps.add(
            n == 0
                ? nothingFor(step)
                : constantUsersPerSec(n * 1_000_000.0 / stepUs).during(step));
      }
      return steps.toArray(new OpenInjectionStep[0]);
    }
    // user k of step i at (i × step + k × step / n), in ms, users of one ms together
    long previousMs = 0;
    for (int i = 0; i < counts.size(); i++) {
      long n = counts.get(i).asLong();
      long k = 0;
      while (k < n) {
        long atMs = (i * stepUs + k * stepUs / n) / 1000;
        long together = 0;
        while (k < n && (i * stepUs + k * stepUs / n) / 1000 == atMs) {
          together++;
          k++;
        }
        if (atMs > previousMs) {
          steps.add(nothingFor(Duration.ofMillis(atMs - previousMs)));
          previousMs = atMs;
        }
        steps.add(atOnceUsers((int) together));
      }
    }
    long endMs = counts.size() * stepUs / 1000;
    if (endMs > previousMs) {
      steps.add(nothingFor(Duration.ofMillis(endMs - previousMs)));
    }
    return steps.toArray(new OpenInjectionStep[0]);
  }

  private static OpenInjectionStep[] arrivals(long users, long durationMs) {
    List<OpenInjectionStep> steps = new ArrayList<>();
    long previous = 0;
    long k = 0;
    while (k < users) {
      long at = k * durationMs / users;
      long together = 0;
      while (k < users && k * durationMs / users == at) {
        together++;
        k++;
      }
      if (at > previous) {
        steps.add(nothingFor(Duration.ofMillis(at - previous)));
        previous = at;
      }
      steps.add(atOnceUsers((int) together));
    }
    if (durationMs > previous) {
      steps.add(nothingFor(Duration.ofMillis(durationMs - previous)));
    }
    return steps.toArray(new OpenInjectionStep[0]);
  }

  /**
   * The requests of one phase. Every part of a request is rendered once, before it is sent, into
   * the user's session ({@code gb.url}, {@code gb.h.N}, {@code gb.body}), so that where the phase
   * checks its answers ({@code answers} in the document) the check compares the backend's
   * signature with exactly what was sent: {@link Answers}.
   */
  private ChainBuilder request(
      String id, JsonNode spec, JsonNode answers, long userBase, long userStride) {
    String method = spec.path("method").asText();
    String base = spec.path("base_url").asText();
    int authority = base.indexOf('/', base.indexOf("://") + 3);
    String basePath = authority < 0 ? "" : base.substring(authority);
    Template path = new Template(secrets, spec.path("path"));
    List<String[]> query = new ArrayList<>();
    List<Template> queryValues = new ArrayList<>();
    for (JsonNode pair : spec.path("query")) {
      query.add(new String[] {pair.get(0).asText()});
      queryValues.add(new Template(secrets, pair.get(1)));
    }
    List<String> headerNames = new ArrayList<>();
    List<Template> headerValues = new ArrayList<>();
    for (JsonNode header : spec.path("headers")) {
      headerNames.add(header.get(0).asText());
      headerValues.add(new Template(secrets, header.get(1)));
    }
    JsonNode body = spec.path("body");
    String bodyKind = body.path("kind").asText("none");
    Template bodyTemplate =
        "template".equals(bodyKind) ? new Template(secrets, body.path("parts")) : null;
    boolean checked = !answers.isMissingNode();
    long every = Math.max(1L, answers.path("every").asLong(1L)); // check one answer in every
    AtomicLong sequence = new AtomicLong();
    String idPrefix = RUN_TAG + "." + id + ".";
    Function<Session, Session> prepare =
        session -> {
          StringBuilder target = new StringBuilder(basePath).append(path.render(session));
          for (int q = 0; q < query.size(); q++) {
            target.append(q == 0 ? '?' : '&').append(query.get(q)[0]).append('=');
            target.append(queryValues.get(q).render(session));
          }
          Map<String, Object> values = new HashMap<>();
          values.put("gb.target", target.toString());
          String origin = base.substring(0, authority < 0 ? base.length() : authority);
          values.put("gb.url", origin + target);
          for (int h = 0; h < headerValues.size(); h++) {
            values.put("gb.h." + h, headerValues.get(h).render(session));
          }
          if (bodyTemplate != null) {
            values.put("gb.body", bodyTemplate.render(session));
          }
          if (checked) {
            long seq = sequence.incrementAndGet();
            // a request left out of the sample names nothing: the backend does not sign
            values.put("gb.rid", (seq - 1) % every == 0 ? idPrefix + seq : "");
          }
          return session.setAll(values);
        };
    HttpRequestActionBuilder req =
        http(id).httpRequest(session -> method, session -> session.getString("gb.url"));
    for (int h = 0; h < headerNames.size(); h++) {
      String key = "gb.h." + h;
      req = req.header(headerNames.get(h), session -> session.getString(key));
    }
    JsonNode auth = spec.path("auth");
    for (JsonNode header : auth) {
      // [header name, prefix, env var(s) joined by the Basic rule]
      String name = header.path("header").asText();
      if (header.path("per_user").asBoolean(false)) {
        String prefix = header.path("prefix").asText("");
        String[] tokens = userTokens.get(header.path("env").asText());
        req =
            req.header(
                name,
                session ->
                    prefix
                        + userToken(tokens, userBase, userStride, session.getLong("gb.user")));
        continue;
      }
      String value = secretValue(header);
      req = req.header(name, session -> value);
    }
    String bodySignature = null; // "length:digest" of a body every request sends alike
    switch (bodyKind) {
      case "none":
        bodySignature = Answers.signature(new byte[0]);
        break;
      case "template":
        req = req.body(StringBody(session -> session.getString("gb.body")));
        break;
      case "bytes":
        {
          byte[] bytes = generated(body.path("size").asInt());
          bodySignature = checked ? Answers.signature(bytes) : null;
          req = req.body(ByteArrayBody(session -> bytes));
          break;
        }
      case "base64":
        {
          byte[] bytes = Base64.getDecoder().decode(body.path("data").asText());
          bodySignature = checked ? Answers.signature(bytes) : null;
          req = req.body(ByteArrayBody(session -> bytes));
          break;
        }
      case "multipart":
        // the boundary is Gatling's own, drawn per request: the body sent is not known here,
        // so the backend's receipt of it is not checked (docs/trust.md)
        for (JsonNode part : body.path("parts")) {
          String partName = part.path("name").asText();
          if (part.has("size")) {
            byte[] bytes = generated(part.path("size").asInt());
            String fileName = part.path("filename").asText(partName + ".bin");
            String type = part.path("content_type").asText("application/octet-stream");
            req =
                req.bodyPart(
                    ByteArrayBodyPart(session -> partName, session -> bytes)
                        .fileName(session -> fileName)
                        .contentType(session -> type));
          } else {
            Template value = new Template(secrets, part.path("parts"));
            var text = StringBodyPart(session -> partName, value::render);
            if (part.has("content_type")) {
              String type = part.path("content_type").asText();
              text = text.contentType(session -> type);
            }
            req = req.bodyPart(text);
          }
        }
        req = req.asMultipartForm();
        break;
      default:
        throw new IllegalArgumentException(id + ": unknown body kind " + bodyKind);
    }
    if (body.has("content_type") && !"multipart".equals(bodyKind)) {
      String type = body.path("content_type").asText();
      req = req.header("Content-Type", session -> type);
    }
    List<Integer> expect = new ArrayList<>();
    for (JsonNode code : spec.path("expect")) {
      expect.add(code.asInt());
    }
    if (checked) {
      List<String> signed = new ArrayList<>();
      for (JsonNode name : answers.path("headers")) {
        signed.add(name.asText());
      }
      List<String> cacheKey = new ArrayList<>();
      for (JsonNode part : answers.path("cache_key")) {
        cacheKey.add(part.asText());
      }
      Answers check =
          new Answers(
              method,
              answers.path("target").asBoolean(true),
              signed,
              headerNames,
              bodyKind,
              bodySignature,
              expect,
              answers.path("cached").asBoolean(false),
              cacheKey,
              answers.path("body").asBoolean(false),
              sequence);
      req = req.header(Answers.REQUEST, session -> session.getString("gb.rid"));
      if (check.keyed()) {
        String parts = String.join(",", cacheKey);
        req = req.header(Answers.CACHE_KEY, session -> parts);
      }
      if (!signed.isEmpty()) {
        String names = String.join(",", signed);
        req = req.header(Answers.SIGNED, session -> names);
      }
      // the signature and the status are saved first, so the verdict sees them; a wrong
      // answer fails before the status check, so it is recorded as one (gatebench.core.answers)
      req =
          req.check(
              header(Answers.ANSWER).withDefault("").saveAs("gb.answer"),
              status().saveAs("gb.status"),
              bodyBytes()
                  .transformWithSession(check::verdict)
                  .validate(
                      "answer",
                      (verdict, session) -> {
                        if (!verdict.isEmpty()) {
                          throw new IllegalStateException(verdict);
                        }
                        return verdict;
                      }));
    }
    req = expect.isEmpty() ? req.check(status().lt(400)) : req.check(status().in(expect));
    req = req.requestTimeout(Duration.ofMillis(spec.path("timeout_ms").asLong(60000)));
    return exec(prepare).exec(req);
  }

  /** Tells this run's request identities from another's (a backend shared across runs). */
  private static final String RUN_TAG =
      Long.toHexString(Double.doubleToLongBits(Math.random()) & 0xffffffL);

  /**
   * The check of one phase's answers against the backend's signature (backend/sign.go; the
   * kinds and the message are gatebench.core.answers'): the answer names this request, the
   * backend received it once, the status and the body read are the ones it sent, and it
   * received what was sent. A failure reads {@code wrong answer (KIND): request ID METHOD
   * PATH; expected ...; got ...}, never with a query or a header value (they may hold a key).
   */
  static final class Answers {
    static final String REQUEST = "X-Gatebench-Request";
    static final String SIGNED = "X-Gatebench-Signed-Headers";
    static final String ANSWER = "X-Gatebench-Answer";
    static final String CACHE_KEY = "X-Gatebench-Cache-Key";
    private static final ThreadLocal<java.security.MessageDigest> SHA =
        ThreadLocal.withInitial(
            () -> {
              try {
                return java.security.MessageDigest.getInstance("SHA-256");
              } catch (java.security.NoSuchAlgorithmException e) {
                throw new IllegalStateException(e);
              }
            });

    private final String method;
    /** gatebench.core.answers.EVIDENCE_KEPT: wrong answers of a phase kept word for word. */
    static final int EVIDENCE_KEPT = 5;

    private final java.util.concurrent.atomic.AtomicInteger kept =
        new java.util.concurrent.atomic.AtomicInteger();
    private final boolean checkTarget;
    private final boolean cached;
    /** The phase's request numbers given so far: the requests a cache may hold an answer of. */
    private final AtomicLong sent;
    /** The parts the gateway's cache keys this operation's answers on (backend/sign.go). */
    private final List<String> cacheKey;

    private final List<String> signed;
    private final List<String> headerNames;
    private final String bodyKind;
    private final String bodySignature;
    private final List<Integer> expect;

    /** The backend copies its signature into its bodies (echo: backend/sign.go, bodyCopy). */
    private final boolean bodyCopied;

    /** How a body that carries a copy of its signature starts. */
    private static final byte[] BODY_COPY =
        "{\"signature\":\"".getBytes(StandardCharsets.US_ASCII);

    Answers(
        String method,
        boolean target,
        List<String> signed,
        List<String> headerNames,
        String bodyKind,
        String bodySignature,
        List<Integer> expect,
        boolean cached,
        List<String> cacheKey,
        boolean bodyCopied,
        AtomicLong sent) {
      this.method = method;
      this.sent = sent;
      this.bodyCopied = bodyCopied;
      this.checkTarget = target;
      this.cached = cached;
      this.cacheKey = cacheKey;
      this.signed = signed;
      this.headerNames = headerNames;
      this.bodyKind = bodyKind;
      this.bodySignature = bodySignature;
      this.expect = expect;
    }

    /** The first 8 bytes of SHA-256 in hex: the backend's digest. */
    static String digest(byte[] data) {
      java.security.MessageDigest sha = SHA.get();
      sha.reset();
      byte[] sum = sha.digest(data);
      StringBuilder out = new StringBuilder(16);
      for (int i = 0; i < 8; i++) {
        out.append(Character.forDigit((sum[i] >> 4) & 0xf, 16));
        out.append(Character.forDigit(sum[i] & 0xf, 16));
      }
      return out.toString();
    }

    static String signature(byte[] data) {
      return data.length + ":" + digest(data);
    }

    /**
     * The copy of the signature a body starts with (engine-made identities only reach it, so
     * it holds no JSON escape); "" when the body starts otherwise.
     */
    static String bodyCopy(byte[] body) {
      byte[] prefix = BODY_COPY;
      if (body.length < prefix.length
          || !Arrays.equals(body, 0, prefix.length, prefix, 0, prefix.length)) {
        return "";
      }
      for (int i = prefix.length; i < body.length; i++) {
        if (body[i] == '"') {
          return new String(body, prefix.length, i - prefix.length, StandardCharsets.US_ASCII);
        }
      }
      return "";
    }

    /** The key=value fields of a signature, or of its copy in a body. */
    static Map<String, String> fields(String signature) {
      Map<String, String> fields = new HashMap<>();
      for (String part : signature.split(";")) {
        int eq = part.indexOf('=');
        if (eq > 0) {
          fields.put(part.substring(0, eq).strip(), part.substring(eq + 1).strip());
        }
      }
      return fields;
    }

    private boolean success(int status) {
      return expect.isEmpty() ? status < 400 : expect.contains(status);
    }

    /**
     * Whether an answer from the gateway's cache is held to this request's cache key: where
     * the plan caches the operation and the backend receives the target as sent.
     */
    boolean keyed() {
      return cached && checkTarget && !cacheKey.isEmpty();
    }

    /** The digest the backend computes of what it received, for what was sent. */
    private String received(Session session) {
      return requestDigest(session, session.getString("gb.target"), signed);
    }

    /** The backend's key digest of this request (the path, the query if keyed on, headers). */
    private String key(Session session) {
      String target = session.getString("gb.target");
      int q = target.indexOf('?');
      String path = q < 0 ? target : target.substring(0, q);
      List<String> names = new ArrayList<>();
      for (String part : cacheKey) {
        if (part.equals("query") && q >= 0 && q + 1 < target.length()) {
          path = target;
        } else if (part.startsWith("header:")) {
          names.add(part.substring("header:".length()));
        }
      }
      return requestDigest(session, path, names);
    }

    /** "METHOD SP target LF" then "name: value LF" for each named header sent, digested. */
    private String requestDigest(Session session, String target, List<String> names) {
      StringBuilder text = new StringBuilder(method).append(' ').append(target);
      text.append('\n');
      for (String name : names) {
        text.append(name).append(':');
        String value = null;
        for (int h = 0; h < headerNames.size(); h++) {
          if (headerNames.get(h).equalsIgnoreCase(name)) {
            String v = session.getString("gb.h." + h).strip();
            value = value == null ? v : value + ", " + v;
          }
        }
        if (value != null) {
          text.append(' ').append(value);
        }
        text.append('\n');
      }
      return digest(text.toString().getBytes(StandardCharsets.UTF_8));
    }

    /** "" for a right answer, else the wrong answer in gatebench.core.answers' words. */
    String verdict(byte[] body, Session session) {
      String rid = session.getString("gb.rid");
      if (rid == null || rid.isEmpty()) {
        return ""; // not in the sample (answers: {every: N})
      }
      String answer = session.getString("gb.answer");
      int status = session.getInt("gb.status");
      String target = session.getString("gb.target");
      int q = target.indexOf('?');
      String request =
          "request " + rid + " " + method + " " + (q < 0 ? target : target.substring(0, q) + "?...");
      String copied = bodyCopied ? bodyCopy(body) : "";
      String copiedId = copied.isEmpty() ? "" : fields(copied).getOrDefault("id", "");
      if (answer == null || answer.isEmpty()) {
        if (!copied.isEmpty()) {
          // the backend's own body without its header: a gateway dropped the signature
          if (!copiedId.equals(rid) && !(cached && sentBefore(copiedId, rid))) {
            return wrong(
                "crossed", request, "its own answer", "the body of request " + copiedId + ", no header");
          }
          return wrong("unsigned", request, "the backend's signature", "its own body, no header");
        }
        return success(status)
            ? wrong("unsigned", request, "the backend's signature", "status " + status + ", none")
            : "";
      }
      Map<String, String> fields = fields(answer);
      String id = fields.getOrDefault("id", "");
      boolean own = id.equals(rid);
      boolean cachedOne = !own && cached && sentBefore(id, rid);
      boolean otherKey =
          cachedOne && keyed() && !fields.getOrDefault("key", "").equals(key(session));
      if (!own && (!cachedOne || otherKey)) {
        String expected = "its own answer";
        if (otherKey) {
          expected = "an answer of its cache key";
        } else if (cached) {
          expected = "its own answer or one of a request of this run already sent (cached)";
        }
        return wrong("crossed", request, expected, "the answer to request " + id);
      }
      if (!copied.isEmpty() && !copiedId.equals(id)) {
        // the head of one answer with the body of another
        return wrong("crossed", request, "its own body", "the body of request " + copiedId);
      }
      String seen = fields.getOrDefault("seen", "");
      if (!seen.equals("1")) {
        return wrong(
            "repeated", request, "the backend to receive it once", "received " + seen + " times");
      }
      String sentStatus = fields.getOrDefault("status", "");
      if (!sentStatus.equals(Integer.toString(status))) {
        return wrong(
            "status", request, "status " + sentStatus + " (the backend's)", "status " + status);
      }
      String sent = fields.getOrDefault("sent", "");
      String read = signature(body);
      if (!sent.equals(read)) {
        return wrong("truncated", request, "the backend's body " + sent, "a body " + read);
      }
      if (!own) {
        return ""; // a cached answer: what the backend received was the earlier request
      }
      if (checkTarget && !fields.getOrDefault("received", "").equals(received(session))) {
        return wrong(
            "received",
            request,
            "the backend to receive the method, target and headers sent",
            "something else");
      }
      String sentBody =
          "template".equals(bodyKind)
              ? signature(session.getString("gb.body").getBytes(StandardCharsets.UTF_8))
              : bodySignature;
      String receivedBody = fields.getOrDefault("received-body", "");
      if (sentBody != null && !sentBody.equals(receivedBody)) {
        return wrong(
            "received",
            request,
            "the backend to receive a body " + sentBody,
            "a body " + receivedBody);
      }
      return "";
    }

    /**
     * Whether {@code id} names another request already sent to the target, which a gateway's
     * cache may hold the answer of: one of another load generator's (a tester beside this one:
     * the gateway outlives them), one of an earlier phase of this one (the target's warm-up, an
     * earlier repetition: the cache outlives a phase), or one of this phase whose number was
     * given. Not "a lower number": users send side by side, and a later-numbered request that
     * reached the gateway first is the one its cache keeps. The cache key still binds it.
     */
    boolean sentBefore(String id, String rid) {
      String[] theirs = id.split("\\.", -1);
      String[] mine = rid.split("\\.", -1);
      if (id.equals(rid) || theirs.length != 3 || mine.length != 3) {
        return false;
      }
      try {
        long n = Long.parseLong(theirs[2]);
        if (!theirs[0].equals(mine[0])) {
          return n >= 0;
        }
        if (theirs[1].equals(mine[1])) {
          return n >= 1 && n <= sent.get();
        }
        return n >= 1
            && theirs[1].startsWith("p")
            && mine[1].startsWith("p")
            && Integer.parseInt(theirs[1].substring(1)) < Integer.parseInt(mine[1].substring(1));
      } catch (NumberFormatException e) {
        return false;
      }
    }

    /**
     * The wrong answer's message: with its evidence for the first {@link #EVIDENCE_KEPT} of the
     * phase, by its kind alone after (every message with its own words would be a new string
     * in the log and in Gatling's table of them, however wrong a target is).
     */
    private String wrong(String kind, String request, String expected, String got) {
      if (kept.getAndIncrement() >= EVIDENCE_KEPT) {
        return "wrong answer (" + kind + ")";
      }
      return "wrong answer (" + kind + "): " + request + "; expected " + expected + "; got " + got;
    }
  }

  private String secretValue(JsonNode header) {
    StringBuilder out = new StringBuilder(header.path("prefix").asText(""));
    JsonNode env = header.path("env");
    if (env.isArray()) {
      // Basic: base64(user:password)
      String user = secrets.get(env.get(0).asText());
      String password = secrets.get(env.get(1).asText());
      out.append(
          Base64.getEncoder()
              .encodeToString((user + ":" + password).getBytes(StandardCharsets.UTF_8)));
    } else {
      out.append(secrets.get(env.asText()));
    }
    return out.toString();
  }

  private static final Map<Integer, byte[]> GENERATED = new HashMap<>();

  /**
   * Deterministic filler content (not all zeros, so compression cannot cheat), one shared array
   * per size: hundreds of phases uploading 8.6 MB share one copy.
   */
  static synchronized byte[] generated(int size) {
    return GENERATED.computeIfAbsent(size, GenericSimulation::fill);
  }

  private static byte[] fill(int size) {
    byte[] bytes = new byte[size];
    long x = 0x9E3779B97F4A7C15L;
    for (int i = 0; i < size; i++) {
      x ^= x << 13;
      x ^= x >>> 7;
      x ^= x << 17;
      bytes[i] = (byte) x;
    }
    return bytes;
  }

  // -- values ---------------------------------------------------------------------------------

  /**
   * A string made of literal text and parameter values. Each part is {"text": "..."} (used as
   * is: the core escaped it already) or {"param": NAME, "as": ENCODING} with ENCODING one of
   * "path" (percent-encoded path segment), "query" (percent-encoded query value), "raw" (as is),
   * "json" (a JSON value: numbers stay numbers) or "json-string" (inside a JSON string).
   */
  static final class Template {
    private final Map<String, String> secrets;
    private final String[] texts;
    private final String[] params;
    private final String[] encodings;

    Template(Map<String, String> secrets, JsonNode parts) {
      this.secrets = secrets;
      int n = parts.size();
      texts = new String[n];
      params = new String[n];
      encodings = new String[n];
      for (int i = 0; i < n; i++) {
        JsonNode part = parts.get(i);
        if (part.has("param")) {
          params[i] = part.path("param").asText();
          encodings[i] = part.path("as").asText("raw");
        } else if (part.has("secret")) {
          // an API key sent in the query string: percent-encoded, never stored
          texts[i] = percentEncode(secrets.getOrDefault(part.path("secret").asText(), ""));
        } else {
          texts[i] = part.path("text").asText();
        }
      }
    }

    String render(Session session) {
      StringBuilder out = new StringBuilder();
      for (int i = 0; i < texts.length; i++) {
        if (params[i] == null) {
          out.append(texts[i]);
          continue;
        }
        Object value = session.get("gb." + params[i]);
        out.append(encode(value, encodings[i]));
      }
      return out.toString();
    }

    private static String encode(Object value, String encoding) {
      String text = value instanceof JsonNode ? ((JsonNode) value).asText() : String.valueOf(value);
      switch (encoding) {
        case "path":
        case "query":
          return percentEncode(text);
        case "json":
          try {
            return JSON.writeValueAsString(value);
          } catch (IOException e) {
            throw new IllegalStateException(e);
          }
        case "json-string":
          try {
            String quoted = JSON.writeValueAsString(text);
            return quoted.substring(1, quoted.length() - 1);
          } catch (IOException e) {
            throw new IllegalStateException(e);
          }
        default:
          return text;
      }
    }

    private static String percentEncode(String text) {
      StringBuilder out = new StringBuilder();
      for (byte b : text.getBytes(StandardCharsets.UTF_8)) {
        int c = b & 0xff;
        if ((c >= 'a' && c <= 'z')
            || (c >= 'A' && c <= 'Z')
            || (c >= '0' && c <= '9')
            || c == '-'
            || c == '.'
            || c == '_'
            || c == '~') {
          out.append((char) c);
        } else {
          out.append('%').append(Character.toUpperCase(Character.forDigit(c >> 4, 16)));
          out.append(Character.toUpperCase(Character.forDigit(c & 0xf, 16)));
        }
      }
      return out.toString();
    }
  }

  /**
   * The plan's generators, one value per parameter per request g of the phase (numbered from 0
   * in the order users take them), as every engine computes them (docs/engine.md, "Values"):
   * constant; list (values[g mod n], or values[floor(u × n)] when random); range (low + g mod
   * (high − low + 1)); random (low + floor(u × (high − low + 1))); counter (start + g × step).
   * u is SplitMix64's (g+1)-th output from the state seed XOR fnv1a64(the parameter's name in
   * UTF-8), its top 53 bits over 2^53: a function of (seed, name, g) alone, the same in
   * loadgen/values.go and engines/wrk_phase.lua. A weighted list (a recorded value
   * distribution) draws from its own seed: {@link #weighted}.
   */
  static final class Values implements Iterator<Map<String, Object>> {
    private final List<String> names = new ArrayList<>();
    private final List<JsonNode> specs = new ArrayList<>();
    private final long[] keys;
    private final long seed;
    private long position;

    Values(JsonNode params, long seed) {
      params.fields().forEachRemaining(e -> {
        names.add(e.getKey());
        specs.add(e.getValue());
      });
      keys = new long[names.size()];
      for (int i = 0; i < keys.length; i++) {
        keys[i] = fnv1a64(names.get(i));
      }
      this.seed = seed;
    }

    static long fnv1a64(String name) {
      long h = 0xcbf29ce484222325L;
      for (byte b : name.getBytes(StandardCharsets.UTF_8)) {
        h ^= (b & 0xff);
        h *= 0x100000001b3L;
      }
      return h;
    }

    /** u of request g for the parameter keyed by key. */
    static double unit(long seed, long key, long g) {
      return unitDraw(seed ^ key, g);
    }

    @Override
    public boolean hasNext() {
      return true;
    }

    @Override
    public synchronized Map<String, Object> next() {
      Map<String, Object> out = new HashMap<>();
      long n = position++;
      for (int i = 0; i < names.size(); i++) {
        JsonNode spec = specs.get(i);
        Object value;
        switch (spec.path("kind").asText()) {
          case "constant":
            value = plain(spec.path("value"));
            break;
          case "list":
            {
              JsonNode values = spec.path("values");
              int at =
                  spec.path("random").asBoolean(false)
                      ? (int) Math.floor(unit(seed, keys[i], n) * values.size())
                      : (int) (n % values.size());
              value = plain(values.get(at));
              break;
            }
          case "range":
            {
              long low = spec.path("low").asLong();
              long span = spec.path("high").asLong() - low + 1;
              value = low + (n % span);
              break;
            }
          case "random":
            {
              long low = spec.path("low").asLong();
              long span = spec.path("high").asLong() - low + 1;
              value = low + (long) Math.floor(unit(seed, keys[i], n) * (double) span);
              break;
            }
          case "counter":
            value = spec.path("start").asLong(1) + n * spec.path("step").asLong(1);
            break;
          case "weighted":
            value = weighted(spec, n);
            break;
          default:
            throw new IllegalArgumentException("unknown generator " + spec.path("kind").asText());
        }
        out.put("gb." + names.get(i), value);
      }
      return out;
    }

    /**
     * Draw n of a weighted list (gatebench.core.workload.weighted_value is the reference): u from
     * SplitMix64 of (seed + (draw + 1) × gamma), then the first value whose cumulative weight
     * exceeds u × total, or one of the others.
     */
    static Object weighted(JsonNode spec, long n) {
      long draw = spec.path("offset").asLong(0) + n * spec.path("stride").asLong(1);
      double x = unitDraw(spec.path("seed").asLong(), draw) * spec.path("total").asDouble();
      JsonNode cumulative = spec.path("cumulative");
      int low = 0;
      int high = cumulative.size();
      while (low < high) {
        int mid = (low + high) >>> 1;
        if (x < cumulative.get(mid).asDouble()) {
          high = mid;
        } else {
          low = mid + 1;
        }
      }
      JsonNode others = spec.path("others");
      if (low < cumulative.size() || others.isMissingNode()) {
        return plain(spec.path("values").get(Math.min(low, cumulative.size() - 1)));
      }
      double listed = cumulative.size() > 0 ? cumulative.get(cumulative.size() - 1).asDouble() : 0.0;
      long count = others.path("count").asLong();
      long j = (long) Math.floor((x - listed) / others.path("weight").asDouble() * count);
      long number = others.path("start").asLong() + Math.min(j, count - 1);
      if (!others.path("text").asBoolean(false)) {
        return number;
      }
      int width = others.path("width").asInt(0);
      String digits = Long.toString(number);
      StringBuilder out = new StringBuilder(others.path("prefix").asText(""));
      for (int pad = digits.length(); pad < width; pad++) {
        out.append('0');
      }
      return out.append(digits).toString();
    }

    /**
     * SplitMix64's output for the state seed + (n + 1) × gamma, as a double in [0, 1)
     * (gatebench.core.workload.unit_draw is the reference): the one mixing of every draw.
     */
    static double unitDraw(long seed, long n) {
      long z = seed + (n + 1) * 0x9E3779B97F4A7C15L;
      z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
      z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
      z = z ^ (z >>> 31);
      return (z >>> 11) * 0x1.0p-53;
    }

    private static Object plain(JsonNode node) {
      if (node.isIntegralNumber()) {
        return node.asLong();
      }
      if (node.isNumber()) {
        return node.asDouble();
      }
      if (node.isBoolean()) {
        return node.asBoolean();
      }
      if (node.isTextual()) {
        return node.asText();
      }
      return node;
    }
  }
}

package gatebench;

import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.filter.Filter;
import ch.qos.logback.core.spi.FilterReply;

/**
 * Lets through Gatling's "Retrying with new HTTP/1.1 connection" lines only (logback-test.xml).
 *
 * <p>Gatling's HTTP client sends a request once more, on a new connection, when the pooled
 * connection it went on closed before a status line came (DefaultHttpClient.retry), and leaves
 * nothing of it in simulation.log: the request reads as one success. That first attempt is a
 * failed request (docs/engine.md, "A connection closed without a response"), and this line, the
 * only trace of it, is how gatebench counts it. The message is a constant: it carries no request
 * detail (no header, no credential). Every other message of the logger is refused here, read
 * before it is formatted.
 */
public final class RetryLines extends Filter<ILoggingEvent> {
  static final String RETRY = "Retrying with new HTTP/1.1 connection";

  @Override
  public FilterReply decide(ILoggingEvent event) {
    return RETRY.equals(event.getMessage()) ? FilterReply.NEUTRAL : FilterReply.DENY;
  }
}

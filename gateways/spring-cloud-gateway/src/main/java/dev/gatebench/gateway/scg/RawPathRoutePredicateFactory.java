package dev.gatebench.gateway.scg;

import java.util.List;
import java.util.function.Predicate;
import java.util.regex.Pattern;

import org.springframework.cloud.gateway.handler.predicate.AbstractRoutePredicateFactory;
import org.springframework.cloud.gateway.handler.predicate.GatewayPredicate;
import org.springframework.web.server.ServerWebExchange;

/**
 * The {@code RawPath} route predicate: a Java regular expression that must match the whole raw
 * request path, exactly as the client sent it (percent-escapes and ';' kept).
 *
 * <p>Spring Cloud Gateway's own {@code Path} predicate matches Spring PathPattern syntax
 * against the decoded path with matrix parameters removed: {@code /files/{name}.json} cannot
 * match {@code /files/a;b.json}, a literal path holding ';' cannot match at all, and
 * {@code /users/me;x} matches {@code /users/me}. gatebench routes the raw path so that every
 * gateway it benchmarks forwards exactly the same requests (docs/jvm-gateways.md).
 */
public class RawPathRoutePredicateFactory
        extends AbstractRoutePredicateFactory<RawPathRoutePredicateFactory.Config> {

    public RawPathRoutePredicateFactory() {
        super(Config.class);
    }

    @Override
    public List<String> shortcutFieldOrder() {
        return List.of("regexp");
    }

    @Override
    public Predicate<ServerWebExchange> apply(Config config) {
        if (config.getRegexp() == null || config.getRegexp().isEmpty()) {
            throw new IllegalArgumentException("RawPath predicate: 'regexp' is required");
        }
        Pattern pattern = Pattern.compile(config.getRegexp());
        return new GatewayPredicate() {
            @Override
            public boolean test(ServerWebExchange exchange) {
                String raw = exchange.getRequest().getURI().getRawPath();
                return raw != null && pattern.matcher(raw).matches();
            }

            @Override
            public Object getConfig() {
                return config;
            }

            @Override
            public String toString() {
                return "RawPath: " + config.getRegexp();
            }
        };
    }

    public static class Config {

        private String regexp;

        public String getRegexp() {
            return regexp;
        }

        public Config setRegexp(String regexp) {
            this.regexp = regexp;
            return this;
        }
    }
}

package dev.gatebench.gateway.zuul;

import java.util.ArrayList;
import java.util.List;
import java.util.regex.Pattern;

import javax.servlet.DispatcherType;
import javax.servlet.http.HttpServletRequest;

import com.netflix.zuul.ZuulFilter;
import com.netflix.zuul.context.RequestContext;

import org.springframework.cloud.netflix.zuul.filters.support.FilterConstants;
import org.springframework.http.HttpStatus;

/**
 * Zuul "pre" filter, right after PreDecorationFilter: the request goes on to the backend only
 * when an operation has its method and its regular expression matches the raw request path
 * (as the client sent it: not decoded, matrix parameters kept). Anything else gets 404, and
 * only the client's own request is ever proxied (never an error or forward dispatch).
 *
 * <p>Zuul's own routes (Ant patterns over the raw path) decide which requests reach Zuul at
 * all; they are written as a superset of the operations, so this filter makes the decision.
 *
 * <p>A configuration refresh ({@code /actuator/refresh}) rebinds the properties with a new
 * list: the patterns are compiled again from it, once, the next time a request arrives.
 */
public class OperationMatchFilter extends ZuulFilter {

    /** After PreDecorationFilter (5), which picks the route and the backend. */
    public static final int ORDER = FilterConstants.PRE_DECORATION_FILTER_ORDER + 1;

    private final OperationsProperties properties;

    /** The operations compiled, and the list they were compiled from. */
    private volatile Compiled compiled;

    public OperationMatchFilter(OperationsProperties properties) {
        this.properties = properties;
        this.compiled = new Compiled(properties.getOperations());
    }

    private static final class Compiled {

        final List<OperationsProperties.Operation> source;

        final List<String> methods = new ArrayList<>();

        final List<Pattern> patterns = new ArrayList<>();

        Compiled(List<OperationsProperties.Operation> source) {
            this.source = source;
            for (OperationsProperties.Operation op : source) {
                if (op.getMethod().isEmpty() || op.getPathRegex().isEmpty()) {
                    throw new IllegalArgumentException(
                            "gatebench.operations: operation '" + op.getId()
                                    + "' needs both a method and a path-regex");
                }
                methods.add(op.getMethod());
                patterns.add(Pattern.compile(op.getPathRegex()));
            }
        }
    }

    private Compiled current() {
        Compiled now = compiled;
        List<OperationsProperties.Operation> source = properties.getOperations();
        if (now.source != source) {
            now = new Compiled(source);
            compiled = now;
        }
        return now;
    }

    @Override
    public String filterType() {
        return FilterConstants.PRE_TYPE;
    }

    @Override
    public int filterOrder() {
        return ORDER;
    }

    @Override
    public boolean shouldFilter() {
        return RequestContext.getCurrentContext().sendZuulResponse();
    }

    @Override
    public Object run() {
        RequestContext ctx = RequestContext.getCurrentContext();
        HttpServletRequest request = ctx.getRequest();
        if (request.getDispatcherType() != DispatcherType.REQUEST) {
            // Tomcat's error dispatch (after a 404 elsewhere) or Zuul's forward to the error
            // page: the path is the error page's, not the client's, so it is never proxied;
            // the status already set (404, or the error's) stands.
            stop(ctx, 0);
            return null;
        }
        if (matches(request.getMethod(), request.getRequestURI())) {
            return null;
        }
        stop(ctx, HttpStatus.NOT_FOUND.value());
        return null;
    }

    private static void stop(RequestContext ctx, int status) {
        ctx.setRouteHost(null);
        ctx.remove(FilterConstants.SERVICE_ID_KEY);
        ctx.remove(FilterConstants.FORWARD_TO_KEY);
        ctx.setSendZuulResponse(false);
        if (status != 0) {
            ctx.setResponseStatusCode(status);
        }
    }

    boolean matches(String method, String rawPath) {
        Compiled now = current();
        for (int i = 0; i < now.patterns.size(); i++) {
            if (now.methods.get(i).equals(method) && now.patterns.get(i).matcher(rawPath).matches()) {
                return true;
            }
        }
        return false;
    }
}

package dev.gatebench.gateway.zuul;

import java.util.Map;

import javax.servlet.http.HttpServletRequest;

import org.apache.http.HttpRequest;
import org.apache.http.entity.InputStreamEntity;
import org.apache.http.message.BasicHttpEntityEnclosingRequest;
import org.apache.http.message.BasicHttpRequest;

import org.springframework.cloud.commons.httpclient.ApacheHttpClientConnectionManagerFactory;
import org.springframework.cloud.commons.httpclient.ApacheHttpClientFactory;
import org.springframework.cloud.netflix.zuul.filters.ProxyRequestHelper;
import org.springframework.cloud.netflix.zuul.filters.ZuulProperties;
import org.springframework.cloud.netflix.zuul.filters.route.SimpleHostRoutingFilter;
import org.springframework.http.HttpHeaders;
import org.springframework.util.MultiValueMap;

import com.netflix.zuul.context.RequestContext;

/**
 * Zuul's SimpleHostRoutingFilter (Apache HttpClient, pooled keep-alive connections), changed
 * only where stock Zuul alters what the client sent:
 *
 * <ul>
 *   <li>the query string is the client's, byte for byte (stock Zuul re-encodes parsed
 *       parameters unless {@code zuul.force-original-query-string-encoding} is set);
 *   <li>a body travels with every method when the client sent one (stock Zuul drops it for
 *       GET, HEAD, OPTIONS and TRACE), and a request without a body gets none (stock Zuul
 *       sends an empty chunked body with DELETE);
 *   <li>no {@code Accept-Encoding: gzip} is added when the client sent none, and HttpClient
 *       adds no User-Agent of its own.
 * </ul>
 */
public class UnchangedForwardingRoutingFilter extends SimpleHostRoutingFilter {

    public UnchangedForwardingRoutingFilter(ZuulProperties properties,
            ApacheHttpClientConnectionManagerFactory connectionManagerFactory,
            ApacheHttpClientFactory httpClientFactory) {
        super(new ClientHeadersOnly(properties), properties, connectionManagerFactory,
                () -> httpClientFactory.createBuilder().disableDefaultUserAgent());
    }

    @Override
    protected HttpRequest buildHttpRequest(String verb, String uri, InputStreamEntity entity,
            MultiValueMap<String, String> headers, MultiValueMap<String, String> params,
            HttpServletRequest request) {
        String query = request.getQueryString();
        String target = (query != null) ? uri + "?" + query : uri;
        HttpRequest out;
        if (request.getContentLengthLong() >= 0 || request.getHeader("Transfer-Encoding") != null) {
            BasicHttpEntityEnclosingRequest withBody = new BasicHttpEntityEnclosingRequest(verb, target);
            withBody.setEntity(entity);
            out = withBody;
        }
        else {
            out = new BasicHttpRequest(verb, target);
        }
        for (Map.Entry<String, java.util.List<String>> header : headers.entrySet()) {
            for (String value : header.getValue()) {
                out.addHeader(header.getKey(), value);
            }
        }
        return out;
    }

    /** Stock header handling, minus the Accept-Encoding Zuul adds when the client sent none. */
    static class ClientHeadersOnly extends ProxyRequestHelper {

        ClientHeadersOnly(ZuulProperties properties) {
            super(properties);
        }

        @Override
        public MultiValueMap<String, String> buildZuulRequestHeaders(HttpServletRequest request) {
            MultiValueMap<String, String> headers = super.buildZuulRequestHeaders(request);
            boolean clientSent = request.getHeader(HttpHeaders.ACCEPT_ENCODING) != null
                    || RequestContext.getCurrentContext().getZuulRequestHeaders()
                            .containsKey(HttpHeaders.ACCEPT_ENCODING.toLowerCase());
            if (!clientSent) {
                headers.remove(HttpHeaders.ACCEPT_ENCODING);
            }
            return headers;
        }
    }
}
